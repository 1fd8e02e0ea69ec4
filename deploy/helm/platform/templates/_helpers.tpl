{{- define "platform.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "platform.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "platform.labels" -}}
{{ include "platform.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{- define "platform.secretName" -}}
{{- .Values.secrets.existingSecret | default (printf "%s-secrets" (include "platform.fullname" .)) -}}
{{- end -}}

{{- define "platform.image" -}}
image: {{ printf "%s:%s" .Values.image.repository .Values.image.tag | quote }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
{{- end -}}

{{/* What every process reads: the settings, the secrets, and where it listens. */}}
{{- define "platform.env" -}}
envFrom:
  - configMapRef:
      name: {{ include "platform.fullname" . }}-config
  - secretRef:
      name: {{ include "platform.secretName" . }}
{{- end -}}

{{- define "platform.temporalTlsEnv" -}}
{{- if .Values.temporalTls.existingSecret -}}
- name: TEMPORAL_TLS_CA_FILE
  value: /etc/platform/temporal-tls/ca.crt
{{- if .Values.temporalTls.mtls }}
- name: TEMPORAL_TLS_CERT_FILE
  value: /etc/platform/temporal-tls/tls.crt
- name: TEMPORAL_TLS_KEY_FILE
  value: /etc/platform/temporal-tls/tls.key
{{- end }}
{{- with .Values.temporalTls.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "platform.temporalTlsMount" -}}
{{- if .Values.temporalTls.existingSecret -}}
- name: temporal-tls
  mountPath: /etc/platform/temporal-tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "platform.temporalTlsVolume" -}}
{{- if .Values.temporalTls.existingSecret -}}
- name: temporal-tls
  secret:
    secretName: {{ .Values.temporalTls.existingSecret }}
{{- end }}
{{- end -}}

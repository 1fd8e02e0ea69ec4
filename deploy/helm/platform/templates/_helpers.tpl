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

{{/*
The restricted Pod Security Standard, at the pod's level: a numeric non-root user (the image's
`node`) and the runtime's default seccomp profile. Every pod but the docker worker's.
*/}}
{{- define "platform.podSecurityContext" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: {{ .Values.podSecurity.runAsUser }}
  runAsGroup: {{ .Values.podSecurity.runAsGroup }}
  seccompProfile:
    type: RuntimeDefault
{{- end -}}

{{/*
The restricted Pod Security Standard, at the container's level: no privilege escalation, no
capabilities; and a read-only root filesystem, which the processes allow (they write no file but
run logs, and libraries get an emptyDir at /tmp: platform.tmpVolume).
*/}}
{{- define "platform.containerSecurityContext" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: [ALL]
{{- end -}}

{{- define "platform.tmpMount" -}}
- name: tmp
  mountPath: /tmp
{{- end -}}

{{- define "platform.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- end -}}

{{/* An HTTP probe of `path` on the container's port `port` (a name). */}}
{{- define "platform.httpProbe" -}}
httpGet:
  path: {{ .path }}
  port: {{ .port }}
{{- end -}}

{{/*
Startup, liveness and readiness of a process serving `liveness` and `readiness` on `port`. The
startup probe gives a slow start (bundling the workflows, a database still coming up) a minute
before liveness counts; liveness restarts a process that has not answered for 30 s; readiness
takes a pod out of its Service after 10 s of 503s.
*/}}
{{- define "platform.probes" -}}
startupProbe:
  {{- include "platform.httpProbe" (dict "path" .liveness "port" .port) | nindent 2 }}
  periodSeconds: 2
  failureThreshold: 30
livenessProbe:
  {{- include "platform.httpProbe" (dict "path" .liveness "port" .port) | nindent 2 }}
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
readinessProbe:
  {{- include "platform.httpProbe" (dict "path" .readiness "port" .port) | nindent 2 }}
  periodSeconds: 5
  timeoutSeconds: 5
  failureThreshold: 2
{{- end -}}

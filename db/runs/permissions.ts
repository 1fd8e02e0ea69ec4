/** The permission names of the spec's Authentication table, granted per key. */
export const PERMISSIONS = [
  'svc_run_submit',
  'svc_run_read',
  'svc_run_control',
  'svc_run_delete',
  'svc_tenant_admin',
  'svc_workflow_submit',
  'svc_workflow_read',
  'svc_workflow_control',
  'svc_template_write',
  'svc_template_read',
  'svc_template_run',
  'svc_timer_write',
  'svc_timer_read',
  'svc_webhook_admin',
  'svc_webhook_read',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

export function isPermission(value: string): value is Permission {
  return (PERMISSIONS as readonly string[]).includes(value);
}

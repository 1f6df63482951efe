import type { SecretBox } from '../auth/secret-box.ts';
import { allowedActions } from '../domain/status-machine.ts';
import { projectedState } from '../jobs/queue.ts';
import type { Job } from '../store/repos/jobs.ts';
import type { Service, ServiceStatus } from '../store/repos/services.ts';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function jobView(job: Job) {
  return {
    job_id: job.id,
    service_id: job.serviceId,
    action: job.action,
    status: job.status,
    error: job.error,
    attempts: job.attempts,
    created_at: iso(job.createdAt),
    started_at: iso(job.startedAt),
    finished_at: iso(job.finishedAt),
  };
}

/** Status: the same in both variants (CONTRACT.md section 3). */
export function statusView(service: ServiceStatus, job: Job | undefined) {
  return {
    status: service.status,
    allowed_actions: allowedActions(projectedState(service)),
    job: job ? jobView(job) : null,
  };
}

/** Details: `ip`, `username`, `password` as variant A shows them, and everything a panel needs. */
export function detailsView(service: Service, job: Job | undefined, box: SecretBox) {
  return {
    service_id: service.id,
    status: service.status,
    ip: service.ips[0] ?? '',
    ips: service.ips,
    username: service.username,
    password: box.open(service.passwordEnc),
    domain_name: service.domainName,
    product_id: service.productId,
    template_id: service.templateId,
    cpu: service.cpu,
    ram: service.ram,
    hdd: service.hdd,
    ip_count: service.ipCount,
    backup: service.backup,
    suspend_reason: service.suspendReason,
    disk_revision: service.diskRevision,
    allowed_actions: allowedActions(projectedState(service)),
    job: job ? jobView(job) : null,
    created_at: iso(service.createdAt),
    terminated_at: iso(service.terminatedAt),
  };
}

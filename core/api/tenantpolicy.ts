/** CreateRate is a tenant's pace of super Pod creates (a TenantPolicy's pods.createRate): a token bucket. */
export interface CreateRate {
  /** creates per second the bucket refills with; 0 turns pacing off */
  perSecond: number;
  /** creates that may go at once after a quiet spell (the bucket's size), at least 1 */
  burst: number;
}

/**
 * DEFAULT_CREATE_RATE is the pace of a tenant without a rate of its own (the built-in TenantPolicy's pods.createRate
 * and the syncer's podCreateRate): 20 per second, as kube-controller-manager's own client creates a tenant's
 * ReplicaSet Pods by default (--kube-api-qps 20), and 10 at once. Measured by the `syncer` bench (2 cores, kwok): a
 * 200-Pod flood paced at 20 per second held the host near one core, where unpaced it took both.
 */
export const DEFAULT_CREATE_RATE: CreateRate = Object.freeze({ perSecond: 20, burst: 10 });

/**
 * ByteRate is a tenant's pace of bytes written to the super cluster (a TenantPolicy's quota.byteRate): a token bucket
 * of `burst` bytes that refills at `perSecond` bytes.
 */
export interface ByteRate {
  /** bytes per second the bucket refills with, at least 1 KiB */
  perSecond: number;
  /** bytes that may be written at once after a quiet spell (the bucket's size), at least 1 KiB */
  burst: number;
}

/**
 * DEFAULT_BYTE_RATE is the byte rate of a tenant whose policy sets none: 512 KiB per second after a burst of 2 MiB. A
 * tenant's Pods are a few KiB each, so 20 Pod creates per second (DEFAULT_CREATE_RATE) use a fifth of it; a tenant
 * writing objects near the 1 MiB per-object cap gets two at once, then one every two seconds (64 MiB, the default byte
 * cap of its ConfigMaps, in about two minutes). The rate that keeps the other tenants' Pod starts within 1.2x of
 * alone while one tenant fills its caps (`npm run bench -- slow-tenant`, docs/benchmarks.md): at twice this rate the
 * tenant at its caps took the super cluster's CPU from them.
 */
export const DEFAULT_BYTE_RATE: ByteRate = Object.freeze({ perSecond: 512 * 1024, burst: 2 * 1024 * 1024 });

/**
 * MAX_BYTE_RATE is the most a TenantPolicy may grant (the schema's maximum of quota.byteRate): 16 MiB per second and
 * 64 MiB at once. Higher rates would let one tenant take the super cluster's etcd and apiserver from the others on
 * the small hosts the platform is measured on (docs/benchmarks.md, slow-tenant).
 */
export const MAX_BYTE_RATE: ByteRate = Object.freeze({ perSecond: 16 * 1024 * 1024, burst: 64 * 1024 * 1024 });

/**
 * ControlPlaneCpu is the CPU a tenant's own control plane (its etcd, kube-apiserver and kube-controller-manager) may
 * take on the host that runs it, where the local provisioner runs it (a TenantPolicy's quota.controlPlaneCPU): a
 * hard ceiling and a weight against everything else when the cores are contended.
 */
export interface ControlPlaneCpu {
  /** the most CPU time the control plane gets, in thousandths of a core per wall second (a CFS quota) */
  millicores: number;
  /** its weight when the host's cores are contended, as cgroup v1 cpu.shares (1024 is one ordinary process's) */
  shares: number;
}

/**
 * DEFAULT_CONTROL_PLANE_CPU is the CPU of a tenant control plane whose policy sets none: one core at most, and the
 * weight of four processes. Unconfined, its three processes weigh 1024 per runnable thread, up to about four at once
 * on two cores: 4096 keeps that share when the host is contended (1024, one process's, would leave a tenant's start a
 * quarter of it behind a busy host's other threads), and the quota bounds what a tenant writing as fast as its apiserver
 * takes can hold of the host. The `slow-tenant` bench (docs/benchmarks.md) measures each process's CPU while one does.
 */
export const DEFAULT_CONTROL_PLANE_CPU: ControlPlaneCpu = Object.freeze({ millicores: 1000, shares: 4096 });

/**
 * MAX_CONTROL_PLANE_CPU is the most a TenantPolicy may grant (the schema's maximum of quota.controlPlaneCPU): 16
 * cores, and a weight of 16 processes.
 */
export const MAX_CONTROL_PLANE_CPU: ControlPlaneCpu = Object.freeze({ millicores: 16_000, shares: 16_384 });

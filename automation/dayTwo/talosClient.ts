// The one seam between the day-two commands and Talos: every call a command makes to a node goes
// through this interface. Production runs talosctl (talosctl.ts); tests use a fake cluster, so no
// test needs talosctl or a node.
import { ExitCode, UserError } from "../errors";

/**
 * An upgrade that installed the new Talos but could not drain the node before its reboot (talosctl
 * 1.13 pulls, installs, drains, then reboots): the node still runs the old version, is (usually)
 * cordoned, and boots the new one at its next reboot.
 */
export class DrainFailedError extends UserError {
  constructor(
    readonly node: string,
    readonly reason: string,
  ) {
    super(
      {
        what: `talosctl upgrade --nodes ${node}`,
        problem: "installed the new Talos but could not drain the node before its reboot",
        got: JSON.stringify(reason),
        fix: "Fix what blocks the eviction (kubectl get pdb -A), then rerun",
      },
      ExitCode.failed,
    );
    this.name = "DrainFailedError";
  }
}

/** The Kubernetes components whose image `talosctl upgrade-k8s` takes a flag for (`--<name>-image`). */
export const KUBERNETES_COMPONENTS = [
  "kubelet",
  "apiserver",
  "controller-manager",
  "scheduler",
  "proxy",
] as const;

/** One of {@link KUBERNETES_COMPONENTS}. */
export type KubernetesComponent = (typeof KUBERNETES_COMPONENTS)[number];

/** What `talosctl upgrade-k8s` is asked to do. */
export interface KubernetesUpgrade {
  /** `1.37.1`. */
  readonly to: string;
  /** `--dry-run`: print the plan, change nothing. */
  readonly dryRun: boolean;
  /** Stopped (and rejected) after this long. */
  readonly timeoutMs: number;
  /**
   * The image (a repository, no tag) of each component to run: upgrade-k8s sets `<image>:v<to>`,
   * from Talos' own registries unless told otherwise.
   */
  readonly images?: Readonly<Partial<Record<KubernetesComponent, string>>>;
  /**
   * `--manifests-no-prune` (talosctl 1.13 and later): objects of manifests that left the config are
   * kept in the cluster instead of deleted.
   */
  readonly noPrune?: boolean;
}

/** One etcd member as `talosctl etcd members` lists it. */
export interface EtcdMember {
  /** The member ID in hex, as `talosctl etcd remove-member` takes it. */
  readonly id: string;
  /** The member's hostname: the node name in this project (the config sets it). Empty while not started. */
  readonly hostname: string;
  readonly peerUrls: readonly string[];
  /** A learner is still catching up and does not count towards quorum. */
  readonly learner: boolean;
}

/**
 * A node's MachineConfig resources. Talos loads the config from its STATE partition at boot into
 * `v1alpha1` (COSI resource version 1) and writes `persistent` only when a config is applied: an
 * apply that takes effect at once replaces both (version 2, 3, …), a staged one only `persistent`
 * (Talos' ApplyConfiguration and config.AcquireController, v1.13 and v1.14). Both are secrets.
 */
export interface NodeConfigs {
  /** The config the node runs (`v1alpha1`), as YAML. */
  readonly running: string;
  /** The COSI version of `v1alpha1`: 1 while nothing was applied since the node booted. */
  readonly runningVersion: number;
  /** The config on disk (`persistent`), when one was applied since the boot; else it is the booted one. */
  readonly persistent?: string;
}

/** One etcd member's status as `talosctl etcd status` reports it on its node. */
export interface EtcdMemberStatus {
  /** The member ID in hex. */
  readonly memberId: string;
  /** The database file's size (its high-water mark: it shrinks only by a defragmentation). */
  readonly dbSizeBytes: number;
  /** The part of it in use; the rest is free space a defragmentation gives back. */
  readonly inUseBytes: number;
  /** inUse / dbSize, 0 to 1. */
  readonly inUseRatio: number;
  /** The member ID of the leader this member sees. */
  readonly leaderId: string;
  readonly raftIndex: number;
  readonly learner: boolean;
  /** The member's own errors (etcd's StatusResponse errors), empty when none. */
  readonly errors: readonly string[];
}

/** An active etcd alarm (`NOSPACE`: the database reached its quota, etcd refuses writes; `CORRUPT`). */
export interface EtcdAlarm {
  readonly memberId: string;
  readonly alarm: string;
}

/** A Talos service as `talosctl service <id>` reports it. */
export interface ServiceStatus {
  /** `Running`, `Preparing`, `Waiting`, `Finished`, … */
  readonly state: string;
  /** `OK`, `Fail`, `?` (unknown), or empty when the service has no health check. */
  readonly health: string;
}

/** Options of a cluster health check. */
export interface HealthCheck {
  /** The control plane the check runs on (server side). */
  readonly via: string;
  readonly controlPlanes: readonly string[];
  readonly workers: readonly string[];
  /** How long Talos waits for the cluster to become healthy before failing. */
  readonly timeoutMs: number;
}

/**
 * Everything the day-two commands ask of Talos. Node arguments are Talos API addresses; every method
 * rejects (with the command's error) when the node does not answer or the command fails.
 */
export interface TalosClient {
  /** The talosctl client's own version (`v1.13.9`); rejects with an install hint when it is missing. */
  clientVersion(): Promise<string>;
  /** The Talos version a node runs (`v1.13.9`). */
  nodeVersion(node: string): Promise<string>;
  /** The Kubernetes version of the node's kubelet (`1.36.3`). */
  kubeletVersion(node: string): Promise<string>;
  /** The Image Factory schematic the node booted; undefined for an image not from the Factory. */
  schematic(node: string): Promise<string | undefined>;
  /** The machine config the node runs, as YAML (all documents). A secret: never print it. */
  machineConfig(node: string): Promise<string>;
  /**
   * The node's MachineConfig resources (`talosctl get machineconfig`): the config it runs and the
   * one it keeps on disk, with how often the running one was replaced since the node booted.
   */
  machineConfigs(node: string): Promise<NodeConfigs>;
  /**
   * The node's boot (Talos 1.14's `BootID` resource, the kernel's boot_id): another one after every
   * reboot; undefined when the node's Talos has no such resource (1.13).
   */
  bootId(node: string): Promise<string | undefined>;
  /** Reboots one node and waits until it is back (`talosctl reboot --wait`). */
  reboot(node: string, timeoutMs: number): Promise<void>;
  /** Waits until the cluster is healthy (Talos' own checks: etcd, kubelet, API server, nodes ready). */
  health(check: HealthCheck): Promise<void>;
  /** The etcd members, as seen by one control plane. */
  etcdMembers(via: string): Promise<EtcdMember[]>;
  /** A service's state on one node (etcd: `Running` with health `OK`, or `Preparing` when waiting for bootstrap). */
  service(node: string, id: string): Promise<ServiceStatus>;
  /** Streams a consistent etcd snapshot from one control plane into `file` (created 0600). */
  etcdSnapshot(via: string, file: string): Promise<void>;
  /**
   * Upgrades one node to `image` and waits for it to come back: talosctl installs it, cordons and
   * drains the node (at most `drainTimeoutMs`), reboots it and uncordons it once Ready. Rejects with
   * {@link DrainFailedError} when the drain failed after the install.
   */
  upgrade(node: string, image: string, timeoutMs: number, drainTimeoutMs?: number): Promise<void>;
  /**
   * `talosctl upgrade-k8s`: the control plane components, the kubelets, then the bootstrap
   * manifests; returns its output (a dry run's plan).
   */
  upgradeKubernetes(via: string, upgrade: KubernetesUpgrade): Promise<string>;
  /** The node hands etcd's leadership to another member, if it holds it (before it leaves). */
  etcdForfeitLeadership(node: string): Promise<void>;
  /** The node leaves etcd gracefully (it must be up). */
  etcdLeave(node: string): Promise<void>;
  /** Removes a member that cannot leave by itself (its node is gone), through another control plane. */
  etcdRemoveMember(via: string, memberId: string): Promise<void>;
  /**
   * How the node keeps etcd's data: the type of its `ETCD` volume (`VolumeStatus ETCD`): `partition`
   * for a dedicated partition (Talos 1.14 `VolumeConfig` ETCD with `provisioning`), which wiping
   * EPHEMERAL leaves intact; `directory` under EPHEMERAL (the default); undefined when the node has
   * no ETCD volume status.
   */
  etcdVolume(node: string): Promise<string | undefined>;
  /**
   * Wipes system volumes of a control plane by label (`EPHEMERAL`, `ETCD`: etcd's data) and reboots
   * it (`talosctl reset --graceful=false --reboot --system-labels-to-wipe=…`); its STATE, so its
   * machine config and the cluster's secrets, stays.
   */
  wipeVolumes(node: string, labels: readonly string[]): Promise<void>;
  /** Bootstraps etcd on one control plane from a snapshot (disaster recovery). */
  bootstrapRecover(node: string, snapshot: string, skipHashCheck: boolean): Promise<void>;
  /** The status of the etcd member on one control plane (`talosctl etcd status`). */
  etcdStatus(node: string): Promise<EtcdMemberStatus>;
  /** The cluster's active etcd alarms, as one control plane lists them (`talosctl etcd alarm list`). */
  etcdAlarms(via: string): Promise<EtcdAlarm[]>;
  /**
   * Defragments the etcd member on one control plane (`talosctl etcd defrag`): its database file is
   * rewritten without the free space, and the member blocks reads and writes meanwhile.
   */
  etcdDefrag(node: string): Promise<void>;
}

/** How a client reaches the cluster: the talosconfig file and the control planes as endpoints. */
export interface TalosConnection {
  /** A 0600 file holding the talosconfig; removed when the command ends. */
  readonly talosconfig: string;
  /** Control-plane addresses talosctl may use as API endpoints (it proxies to every node). */
  readonly endpoints: readonly string[];
  /** The cluster's Talos version as the stack file says, for the install hint when talosctl is missing. */
  readonly clusterTalosVersion?: string;
}

/** Creates a client for one cluster; production passes the talosctl-backed one. */
export type TalosClientFactory = (connection: TalosConnection) => TalosClient;

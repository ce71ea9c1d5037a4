// A fake Talos cluster behind the TalosClient interface: nodes with versions, kubelets, configs and
// etcd members, scripted failures, and a log of every call in order, so tests can assert which
// node was touched when.
import * as fs from "node:fs";
import * as path from "node:path";
import type {
  EtcdAlarm,
  EtcdMember,
  EtcdMemberStatus,
  HealthCheck,
  KubernetesUpgrade,
  NodeConfigs,
  ServiceStatus,
  TalosClient,
  TalosConnection,
} from "../../automation/dayTwo/talosClient";
import { imageSchematic, imageTag } from "../../automation/dayTwo/talosctlOutput";
import { DrainFailedError } from "../../automation/dayTwo/talosClient";
import type { DayTwoClock } from "../../automation/dayTwo/clock";

/**
 * A hand-written upgrade-k8s dry run (test/fixtures/upgrade-k8s/) with the cluster's versions in
 * place of the file's: its detected lowest version and its target.
 */
function dryRunOutput(name: string, from: string, to: string): string {
  const text = fs.readFileSync(
    path.join(__dirname, "..", "fixtures", "upgrade-k8s", `${name}.txt`),
    "utf8",
  );
  const recordedFrom = /^automatically detected the lowest Kubernetes version (\S+)$/m.exec(
    text,
  )![1];
  const recordedTo = /^updating kubelet to version "([^"]+)"$/m.exec(text)![1];
  const versions = new Map([
    [recordedFrom, from],
    [recordedTo, to],
  ]);
  const escape = (v: string) => v.replace(/\./g, "\\.");
  const pattern = new RegExp(
    `(?<![\\d.])(${[...versions.keys()].map(escape).join("|")})(?![\\d.])`,
    "g",
  );
  return text.replace(pattern, (version) => versions.get(version)!);
}

/** One simulated node. */
export interface FakeNode {
  name: string;
  address: string;
  role: "controlplane" | "worker";
  version: string;
  kubelet: string;
  /** The kubelet image as the node's KubeletSpec shows it; default `ghcr.io/siderolabs/kubelet:v<kubelet>`. */
  kubeletImage?: string;
  config: string;
  up: boolean;
  etcd?: ServiceStatus;
  /** The Image Factory schematic it booted (an upgrade with a Factory image sets it). */
  schematic?: string;
  /** The type of its ETCD volume: `directory` under EPHEMERAL (default) or a dedicated `partition`. */
  etcdVolume?: string;
  /** MachineConfig v1alpha1's version: 1 until a config is applied since the boot (default 1). */
  configVersion?: number;
  /** How many times it booted in the test (its BootID, on Talos 1.14, changes with it). */
  boots?: number;
}

/** What an upgrade of a node does. */
export type UpgradeBehaviour =
  /** Upgrades: the node comes back on the image's tag. */
  | "ok"
  /** talosctl upgrade fails; the node is unchanged. */
  | "fail"
  /** The node boots back into its old image (silent A/B rollback) and looks healthy. */
  | "rollback"
  /** The node never comes back. */
  | "down"
  /** talosctl installs the new version, then fails to drain the node: it keeps running the old one. */
  | "drainFails";

/** A clock whose sleep advances its time at once. */
export class FakeClock implements DayTwoClock {
  slept = 0;
  constructor(public time = Date.UTC(2026, 0, 30, 10, 15, 0)) {}
  now(): number {
    return this.time;
  }
  async sleep(ms: number): Promise<void> {
    this.slept += ms;
    this.time += ms;
  }
}

/** A simulated cluster. */
export class FakeTalos implements TalosClient {
  /** Every call, in order: `upgrade cp-1`, `health`, `snapshot cp-1`, … */
  readonly log: string[] = [];
  readonly connections: TalosConnection[] = [];
  readonly nodes: FakeNode[];
  members: EtcdMember[];
  client: string | Error = "v1.13.9";
  upgrades = new Map<string, UpgradeBehaviour>();
  /** Health fails once this node has been upgraded (by name), or always with `true`. */
  healthFailsAfter: string | boolean = false;
  /** upgrade-k8s fails (dry run or real). */
  kubernetesFails: "dry-run" | "real" | false = false;
  snapshotFails = new Set<string>();
  /** Each upgrade takes this long on the clock. */
  upgradeMs = 3 * 60_000;
  /** After bootstrapRecover, members rejoin after this many member listings. */
  rejoinAfter = 1;
  private listingsSinceRecover = 0;
  /** Learners by hostname, and how many member listings until etcd promotes each. */
  private readonly promotions = new Map<string, number>();
  private recovered = false;

  constructor(
    nodes: readonly (Pick<FakeNode, "name" | "address" | "role"> & Partial<FakeNode>)[],
    readonly clock: FakeClock = new FakeClock(),
  ) {
    this.nodes = nodes.map((n) => ({
      name: n.name,
      address: n.address,
      role: n.role,
      version: n.version ?? "v1.13.9",
      kubelet: n.kubelet ?? "1.36.3",
      config: n.config ?? `version: v1alpha1\nmachine:\n  type: ${n.role}\n`,
      up: n.up ?? true,
      ...(n.etcd ? { etcd: n.etcd } : {}),
      ...(n.kubeletImage ? { kubeletImage: n.kubeletImage } : {}),
      ...(n.schematic ? { schematic: n.schematic } : {}),
    }));
    this.members = this.nodes
      .filter((n) => n.role === "controlplane")
      .map((n, i) => ({
        id: `8a1b2c3d4e5f60${String(i + 1).padStart(2, "0")}`,
        hostname: n.name,
        peerUrls: [`https://${n.address}:2380`],
        learner: false,
      }));
  }

  /**
   * A machine the engine just created boots: a control plane joins etcd as a learner, which etcd
   * promotes to a voter after `promoteAfter` member listings (Talos' join of a new member).
   */
  join(node: Pick<FakeNode, "name" | "address" | "role">, promoteAfter = 2): void {
    this.nodes.push({
      ...node,
      version: this.nodes[0]?.version ?? "v1.13.9",
      kubelet: this.nodes[0]?.kubelet ?? "1.36.3",
      config: `version: v1alpha1\nmachine:\n  type: ${node.role}\n`,
      up: true,
    });
    if (node.role !== "controlplane") return;
    this.members.push({
      id: `8a1b2c3d4e5f60${String(this.members.length + 1).padStart(2, "0")}`,
      hostname: node.name,
      peerUrls: [`https://${node.address}:2380`],
      learner: promoteAfter > 0,
    });
    if (promoteAfter > 0) this.promotions.set(node.name, promoteAfter);
  }

  /** The engine deleted the node's machine. */
  remove(name: string): void {
    this.nodes.splice(this.nodes.indexOf(this.byName(name)), 1);
  }

  /** The factory the CLI calls. */
  readonly factory = (connection: TalosConnection): TalosClient => {
    this.connections.push(connection);
    return this;
  };

  node(address: string): FakeNode {
    const found = this.nodes.find((n) => n.address === address);
    if (!found) throw new Error(`fake: unknown node ${address}`);
    return found;
  }

  byName(name: string): FakeNode {
    const found = this.nodes.find((n) => n.name === name);
    if (!found) throw new Error(`fake: unknown node ${name}`);
    return found;
  }

  private reach(address: string): FakeNode {
    const n = this.node(address);
    if (!n.up)
      throw new Error(`rpc error: code = Unavailable desc = connection refused (${n.name})`);
    return n;
  }

  /** The calls of one method, as logged. */
  callsOf(method: string): string[] {
    return this.log.filter((line) => line === method || line.startsWith(`${method} `));
  }

  async clientVersion(): Promise<string> {
    this.log.push("clientVersion");
    if (this.client instanceof Error) throw this.client;
    return this.client;
  }

  async nodeVersion(node: string): Promise<string> {
    const n = this.reach(node);
    this.log.push(`version ${n.name}`);
    return n.version;
  }

  async kubeletVersion(node: string): Promise<string> {
    const n = this.reach(node);
    this.log.push(`kubelet ${n.name}`);
    return n.kubelet;
  }

  async schematic(node: string): Promise<string | undefined> {
    const n = this.reach(node);
    this.log.push(`schematic ${n.name}`);
    return n.schematic;
  }

  async machineConfig(node: string): Promise<string> {
    const n = this.reach(node);
    this.log.push(`config ${n.name}`);
    return n.config;
  }

  /** Configs staged for the next reboot, by node name. */
  readonly staged = new Map<string, string>();
  /** Nodes that come back from a reboot without their staged config (it failed to apply). */
  readonly keepsOld = new Set<string>();

  /** Stages a change (a sysctl) on a node, as an `up` with a reboot-needing change does. */
  stage(name: string, sysctl: string): void {
    const running = this.byName(name).config;
    this.staged.set(name, running.replace("machine:\n", `machine:\n  sysctls:\n    ${sysctl}\n`));
  }

  /**
   * A config applied as Talos 1.14 applies it (`auto` is no-reboot): the node runs it at once and
   * keeps it on disk; nothing is staged, whatever it changes.
   */
  applyNow(name: string, config: string): void {
    const n = this.byName(name);
    n.config = config;
    n.configVersion = (n.configVersion ?? 1) + 1;
    this.staged.set(name, config);
  }

  async machineConfigs(node: string): Promise<NodeConfigs> {
    const n = this.reach(node);
    this.log.push(`configs ${n.name}`);
    const persistent = this.staged.get(n.name);
    return {
      running: n.config,
      runningVersion: n.configVersion ?? 1,
      ...(persistent !== undefined ? { persistent } : {}),
    };
  }

  async bootId(node: string): Promise<string | undefined> {
    const n = this.reach(node);
    this.log.push(`bootid ${n.name}`);
    // BootID came with Talos 1.14.
    return /^v1\.(1[4-9]|[2-9]\d)\./.test(n.version) ? `boot-${n.name}-${n.boots ?? 1}` : undefined;
  }

  /** A boot, as Talos boots: the config on disk is loaded, nothing applied since, a new BootID. */
  protected boot(n: FakeNode): void {
    const onDisk = this.staged.get(n.name);
    if (onDisk !== undefined && !this.keepsOld.has(n.name)) n.config = onDisk;
    this.staged.delete(n.name);
    n.configVersion = 1;
    n.boots = (n.boots ?? 1) + 1;
  }

  async reboot(node: string, _timeoutMs: number): Promise<void> {
    const n = this.node(node);
    this.log.push(`reboot ${n.name}`);
    this.clock.time += 60_000;
    this.boot(n);
  }

  /** Every health check, in order, with the wait it was given. */
  readonly healthChecks: HealthCheck[] = [];

  /**
   * What `talosctl health` would report failing now, as its check and error (the check names are
   * talosctl v1.13's): a node that is down, or the scripted failure; undefined when healthy.
   */
  healthProblem(): { check: string; reason: string } | undefined {
    const down = this.nodes.filter((n) => !n.up);
    const cpDown = down.filter((n) => n.role === "controlplane");
    if (cpDown.length > 0) {
      return {
        check: "etcd to be healthy",
        reason: `${cpDown.map((n) => n.address).join(", ")}: rpc error: code = Unavailable desc = connection refused`,
      };
    }
    if (down.length > 0) {
      return {
        check: "all k8s nodes to report ready",
        reason: `some nodes are not ready: [${down.map((n) => n.name).join(" ")}]`,
      };
    }
    const failAfter = this.healthFailsAfter;
    if (failAfter === true) {
      return { check: "all k8s nodes to report ready", reason: "some nodes are not ready: [w-1]" };
    }
    if (
      typeof failAfter === "string" &&
      this.log.some((l) => l.startsWith(`upgrade ${failAfter} `))
    ) {
      return {
        check: "all k8s nodes to report ready",
        reason: `some nodes are not ready: [${failAfter}]`,
      };
    }
    return undefined;
  }

  async health(check: HealthCheck): Promise<void> {
    this.log.push(`health via ${this.node(check.via).name}`);
    this.healthChecks.push(check);
    const down = this.nodes.filter((n) => !n.up);
    if (down.length > 0)
      throw new Error(`waiting for ${down.map((n) => n.name).join(", ")}: timeout`);
    if (this.healthProblem()) throw new Error("healthcheck error: all k8s nodes are not ready");
  }

  async etcdMembers(via: string): Promise<EtcdMember[]> {
    const n = this.reach(via);
    this.log.push(`members via ${n.name}`);
    for (const [name, left] of this.promotions) {
      if (left > 1) this.promotions.set(name, left - 1);
      else {
        this.promotions.delete(name);
        this.members = this.members.map((m) =>
          m.hostname === name ? { ...m, learner: false } : m,
        );
      }
    }
    if (this.recovered && this.listingsSinceRecover++ < this.rejoinAfter) {
      return this.members.filter((m) => m.hostname === this.nodes[0].name);
    }
    return this.members.map((m) => ({ ...m }));
  }

  async service(node: string, id: string): Promise<ServiceStatus> {
    const n = this.reach(node);
    this.log.push(`service ${id} ${n.name}`);
    return n.etcd ?? { state: "Running", health: "OK" };
  }

  async etcdSnapshot(via: string, file: string): Promise<void> {
    const n = this.reach(via);
    this.log.push(`snapshot via ${n.name}`);
    if (this.snapshotFails.has(n.name)) throw new Error("etcdserver: not healthy");
    // A talosctl snapshot: a multiple of 512 bytes plus the 32-byte SHA-256.
    fs.writeFileSync(file, Buffer.alloc(1024 + 32, 1), { mode: 0o644 });
  }

  /** The drain time-out of every upgrade, in order. */
  readonly drainTimeouts: (number | undefined)[] = [];

  async upgrade(
    node: string,
    image: string,
    _timeoutMs: number,
    drainTimeoutMs?: number,
  ): Promise<void> {
    const n = this.reach(node);
    this.log.push(`upgrade ${n.name} ${image}`);
    this.drainTimeouts.push(drainTimeoutMs);
    this.clock.time += this.upgradeMs;
    const behaviour = this.upgrades.get(n.name) ?? "ok";
    if (behaviour === "fail") throw new Error("error during upgrade: failed to pull image");
    if (behaviour === "drainFails") {
      throw new DrainFailedError(
        node,
        `error draining node "${n.name}": global timeout reached: 5m0s`,
      );
    }
    if (behaviour === "down") {
      n.up = false;
      return;
    }
    if (behaviour === "ok") {
      n.version = imageTag(image)!;
      const schematic = imageSchematic(image);
      if (schematic) n.schematic = schematic;
      this.boot(n);
    }
  }

  /** What upgrade-k8s's dry run prints: a file of test/fixtures/upgrade-k8s/ (hand-written from Talos' source). */
  kubernetesDryRun = "dry-run";
  /** Every upgrade-k8s call, in order, as the client asked for it. */
  readonly kubernetesUpgrades: KubernetesUpgrade[] = [];

  async upgradeKubernetes(via: string, upgrade: KubernetesUpgrade): Promise<string> {
    const n = this.reach(via);
    const { to, dryRun } = upgrade;
    this.kubernetesUpgrades.push(upgrade);
    this.log.push(`upgrade-k8s via ${n.name} --to ${to}${dryRun ? " --dry-run" : ""}`);
    if (this.kubernetesFails === (dryRun ? "dry-run" : "real")) {
      throw new Error("error: removed API in use: flowcontrol.apiserver.k8s.io/v1beta3");
    }
    if (dryRun) {
      const lowest = this.nodes
        .map((node) => node.kubelet)
        .sort((a, b) => a.localeCompare(b, undefined, { numeric: true }))[0];
      return dryRunOutput(this.kubernetesDryRun, lowest, to);
    }
    for (const node of this.nodes) {
      node.kubelet = to;
      if (upgrade.images?.kubelet) node.kubeletImage = `${upgrade.images.kubelet}:v${to}`;
      else delete node.kubeletImage;
    }
    return "";
  }

  async etcdForfeitLeadership(node: string): Promise<void> {
    const n = this.reach(node);
    this.log.push(`etcd forfeit-leadership ${n.name}`);
  }

  async etcdLeave(node: string): Promise<void> {
    const n = this.reach(node);
    this.log.push(`etcd leave ${n.name}`);
    this.members = this.members.filter((m) => m.hostname !== n.name);
  }

  async etcdRemoveMember(via: string, memberId: string): Promise<void> {
    const n = this.reach(via);
    this.log.push(`etcd remove-member ${memberId} via ${n.name}`);
    this.members = this.members.filter((m) => m.id !== memberId);
  }

  async etcdVolume(node: string): Promise<string | undefined> {
    const n = this.reach(node);
    this.log.push(`volume ETCD ${n.name}`);
    return n.etcdVolume ?? "directory";
  }

  /** The labels of every wipe, by node name. */
  readonly wiped = new Map<string, readonly string[]>();

  async wipeVolumes(node: string, labels: readonly string[]): Promise<void> {
    const n = this.reach(node);
    this.log.push(`wipe ${n.name}`);
    this.wiped.set(n.name, labels);
    this.wipeEtcdData(n, labels);
  }

  /**
   * What a reset does to etcd, as Talos' reset handler and etcd service do: a directory-backed ETCD
   * label alone is refused (it lives on EPHEMERAL); etcd starts empty, waiting for a bootstrap, only
   * when the volume holding its data was wiped.
   */
  protected wipeEtcdData(n: FakeNode, labels: readonly string[]): boolean {
    const dedicated = n.etcdVolume === "partition";
    if (!dedicated && labels.includes("ETCD") && !labels.includes("EPHEMERAL")) {
      throw new Error(
        'failed to reset: volume "ETCD" resides on volume "EPHEMERAL", and therefore "ETCD" cannot be wiped without wiping "EPHEMERAL"',
      );
    }
    const empty = labels.includes(dedicated ? "ETCD" : "EPHEMERAL");
    if (empty) n.etcd = { state: "Preparing", health: "?" };
    return empty;
  }

  async bootstrapRecover(node: string, snapshot: string, skipHashCheck: boolean): Promise<void> {
    const n = this.reach(node);
    this.log.push(
      `bootstrap ${n.name} --recover-from=${snapshot}${skipHashCheck ? " --recover-skip-hash-check" : ""}`,
    );
    for (const cp of this.nodes.filter((x) => x.role === "controlplane"))
      cp.etcd = { state: "Running", health: "OK" };
    this.recovered = true;
    this.listingsSinceRecover = 0;
  }

  /** Each member's database: its size and the part in use, by node name (default 20 MB, 10 MB). */
  readonly etcdDb = new Map<string, { size: number; inUse: number }>();
  /** Active alarms, as `etcd alarm list` prints them. */
  alarms: EtcdAlarm[] = [];
  /** A defragmentation fails on these nodes (by name). */
  readonly defragFails = new Set<string>();

  private memberOf(name: string): EtcdMember | undefined {
    return this.members.find((m) => m.hostname === name);
  }

  async etcdStatus(node: string): Promise<EtcdMemberStatus> {
    const n = this.reach(node);
    this.log.push(`etcd status ${n.name}`);
    const member = this.memberOf(n.name);
    if (!member)
      throw new Error(`rpc error: code = Unavailable desc = etcd is not running on ${n.name}`);
    const db = this.etcdDb.get(n.name) ?? { size: 20_000_000, inUse: 10_000_000 };
    return {
      memberId: member.id,
      dbSizeBytes: db.size,
      inUseBytes: db.inUse,
      inUseRatio: db.inUse / db.size,
      leaderId: this.members[0]?.id ?? "",
      raftIndex: 1000,
      learner: member.learner,
      errors: [],
    };
  }

  async etcdAlarms(via: string): Promise<EtcdAlarm[]> {
    const n = this.reach(via);
    this.log.push(`etcd alarms via ${n.name}`);
    return this.alarms.map((a) => ({ ...a }));
  }

  async etcdDefrag(node: string): Promise<void> {
    const n = this.reach(node);
    this.log.push(`etcd defrag ${n.name}`);
    if (this.defragFails.has(n.name)) throw new Error("rpc error: code = DeadlineExceeded");
    const db = this.etcdDb.get(n.name) ?? { size: 20_000_000, inUse: 10_000_000 };
    this.etcdDb.set(n.name, { size: db.inUse, inUse: db.inUse });
  }
}

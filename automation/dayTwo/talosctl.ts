// The talosctl-backed TalosClient: one talosctl process per call (through the tool runner), always
// with the cluster's own talosconfig (a 0600 temp file), the control planes as endpoints and exactly
// the node it targets, so the operator's ~/.talos/config and its current context never matter.
// Every call has a time-out after which talosctl is stopped.
import { formatDuration, goDuration } from "./clock";
import { parseEtcdAlarms, parseEtcdStatus } from "./etcdStatusOutput";
import {
  DrainFailedError,
  type EtcdAlarm,
  type EtcdMember,
  type EtcdMemberStatus,
  KUBERNETES_COMPONENTS,
  type KubernetesUpgrade,
  type HealthCheck,
  type NodeConfigs,
  type ServiceStatus,
  type TalosClient,
  type TalosConnection,
} from "./talosClient";
import {
  parseBootId,
  parseClientVersion,
  parseEtcdMembers,
  parseKubeletVersion,
  parseHealthFailure,
  parseMachineConfig,
  parseMachineConfigs,
  parseSchematic,
  parseServerVersion,
  parseServiceStatus,
  parseVolumeType,
  withoutSecretDiffs,
} from "./talosctlOutput";
import { type CommandRunner, Tool } from "./toolRunner";

/** Time-outs of each kind of call. */
export const TALOSCTL_TIMEOUTS = {
  /** version, get, service, etcd members/leave/remove-member. */
  query: 60_000,
  etcdSnapshot: 10 * 60_000,
  reset: 15 * 60_000,
  bootstrap: 5 * 60_000,
  /** Added to the time-outs talosctl is given itself, so it reports before it is killed. */
  margin: 2 * 60_000,
} as const;

/** Options of the talosctl client. */
interface TalosctlOptions {
  readonly connection: TalosConnection;
  /** The talosctl program (TALOSCTL, else `talosctl` on PATH). */
  readonly binary?: string;
  readonly run?: CommandRunner;
  /** Progress of long commands (upgrade, upgrade-k8s, health, reboot) goes here. */
  readonly progress?: (text: string) => void;
}

/** The install hint when talosctl is missing: the release of the cluster's Talos version. */
function installHint(talosVersion: string | undefined): string {
  const minor = talosVersion ? /^v?(\d+\.\d+)/.exec(talosVersion)?.[1] : undefined;
  const version = talosVersion ? `v${talosVersion.replace(/^v/, "")}` : undefined;
  return minor && version
    ? `Install talosctl v${minor} (the cluster runs Talos ${version}): https://github.com/siderolabs/talos/releases/download/${version}/talosctl-$(uname -s | tr A-Z a-z)-amd64 (or arm64), made executable on PATH, or set TALOSCTL to its path`
    : "Install talosctl of the cluster's Talos minor (https://github.com/siderolabs/talos/releases) on PATH, or set TALOSCTL to its path";
}

/** One call: its time-out, whether its output streams, and the node it targets (none: local). */
interface Call {
  readonly node?: string;
  readonly timeoutMs: number;
  readonly stream?: boolean;
}

/** A TalosClient that runs talosctl. */
export class TalosctlClient implements TalosClient {
  private readonly tool: Tool;

  constructor(private readonly options: TalosctlOptions) {
    this.tool = new Tool({
      name: "talosctl",
      binary: options.binary ?? "talosctl",
      installHint: installHint(options.connection.clusterTalosVersion),
      ...(options.run ? { run: options.run } : {}),
      ...(options.progress ? { progress: options.progress } : {}),
    });
  }

  /** The full arguments and how the command is shown: never the talosconfig's path. */
  private command(args: readonly string[], call: Call) {
    const { talosconfig, endpoints } = this.options.connection;
    const target =
      call.node === undefined
        ? []
        : ["--talosconfig", talosconfig, "--endpoints", endpoints.join(","), "--nodes", call.node];
    return {
      args: [...args, ...target],
      shown: `talosctl ${args.join(" ")}${call.node === undefined ? "" : ` --nodes ${call.node}`}`,
    };
  }

  private exec(
    args: readonly string[],
    call: Call & { readonly progress?: (text: string) => void },
  ): Promise<string> {
    const { args: full, shown } = this.command(args, call);
    return this.tool.exec(full, {
      timeoutMs: call.timeoutMs,
      ...(call.stream ? { stream: true } : {}),
      ...(call.progress ? { progress: call.progress } : {}),
      shown,
      fix: "Fix the cause (the node's state, its reachability) and rerun",
    });
  }

  async clientVersion(): Promise<string> {
    return parseClientVersion(
      await this.exec(["version", "--client", "--short"], { timeoutMs: TALOSCTL_TIMEOUTS.query }),
    );
  }

  async nodeVersion(node: string): Promise<string> {
    return parseServerVersion(
      await this.exec(["version"], { node, timeoutMs: TALOSCTL_TIMEOUTS.query }),
    );
  }

  async kubeletVersion(node: string): Promise<string> {
    return parseKubeletVersion(
      await this.exec(["get", "kubeletspec", "--output", "yaml"], {
        node,
        timeoutMs: TALOSCTL_TIMEOUTS.query,
      }),
    );
  }

  async schematic(node: string): Promise<string | undefined> {
    return parseSchematic(
      await this.exec(["get", "extensions", "--output", "yaml"], {
        node,
        timeoutMs: TALOSCTL_TIMEOUTS.query,
      }),
    );
  }

  async machineConfig(node: string): Promise<string> {
    return parseMachineConfig(
      await this.exec(["get", "machineconfig", "v1alpha1", "--output", "yaml"], {
        node,
        timeoutMs: TALOSCTL_TIMEOUTS.query,
      }),
    );
  }

  async machineConfigs(node: string): Promise<NodeConfigs> {
    // The list, not `get machineconfig persistent`: a node that booted and took no config since
    // has no `persistent` resource, and asking for it by ID fails with NotFound.
    return parseMachineConfigs(
      await this.exec(["get", "machineconfig", "--output", "yaml"], {
        node,
        timeoutMs: TALOSCTL_TIMEOUTS.query,
      }),
    );
  }

  async bootId(node: string): Promise<string | undefined> {
    const output = await this.getResource(node, "bootid", "boot-id");
    return output === undefined ? undefined : parseBootId(output);
  }

  async reboot(node: string, timeoutMs: number): Promise<void> {
    await this.exec(["reboot", "--wait", "--timeout", goDuration(timeoutMs)], {
      node,
      timeoutMs: timeoutMs + TALOSCTL_TIMEOUTS.margin,
      stream: true,
    });
  }

  async health(check: HealthCheck): Promise<void> {
    const args = ["health", "--wait-timeout", goDuration(check.timeoutMs)];
    if (check.controlPlanes.length > 0)
      args.push("--control-plane-nodes", check.controlPlanes.join(","));
    if (check.workers.length > 0) args.push("--worker-nodes", check.workers.join(","));
    const call = { node: check.via, timeoutMs: check.timeoutMs + TALOSCTL_TIMEOUTS.margin };
    const { args: full, shown } = this.command(args, call);
    const toolCall = {
      timeoutMs: call.timeoutMs,
      stream: true,
      shown,
      fix: "Fix what it names (talosctl -n <node> dmesg, kubectl get nodes), or, if it only needs longer, give the command a larger --health-timeout",
    };
    const result = await this.tool.start(full, toolCall);
    if (result.code === 0 && !result.timedOut) return;
    // talosctl retries a failing check until --wait-timeout, printing its error each time; its
    // final line is only the gRPC deadline. The check it last reported failing says what is wrong.
    const failure = parseHealthFailure(`${result.stderr}\n${result.stdout}`);
    throw this.tool.failure(
      result,
      toolCall,
      failure && {
        problem: `the check "${failure.check}" did not pass (waited up to ${formatDuration(check.timeoutMs)})`,
        got: JSON.stringify(failure.reason),
      },
    );
  }

  async etcdMembers(via: string): Promise<EtcdMember[]> {
    return parseEtcdMembers(
      await this.exec(["etcd", "members"], { node: via, timeoutMs: TALOSCTL_TIMEOUTS.query }),
    );
  }

  async service(node: string, id: string): Promise<ServiceStatus> {
    return parseServiceStatus(
      await this.exec(["service", id], { node, timeoutMs: TALOSCTL_TIMEOUTS.query }),
    );
  }

  async etcdSnapshot(via: string, file: string): Promise<void> {
    // talosctl writes <file>.part with mode 0600 and renames it when the checksum is present.
    await this.exec(["etcd", "snapshot", file], {
      node: via,
      timeoutMs: TALOSCTL_TIMEOUTS.etcdSnapshot,
    });
  }

  async upgrade(
    node: string,
    image: string,
    timeoutMs: number,
    drainTimeoutMs?: number,
  ): Promise<void> {
    // --wait follows the node through its reboot until it is ready again; --timeout bounds that.
    const args = ["upgrade", "--image", image, "--wait", "--timeout", goDuration(timeoutMs)];
    if (drainTimeoutMs !== undefined) args.push("--drain-timeout", goDuration(drainTimeoutMs));
    const call = { node, timeoutMs: timeoutMs + TALOSCTL_TIMEOUTS.margin };
    const { args: full, shown } = this.command(args, call);
    const toolCall = {
      timeoutMs: call.timeoutMs,
      stream: true,
      shown,
      fix: "Fix the cause (the node's state, its reachability) and rerun",
    };
    const result = await this.tool.start(full, toolCall);
    if (result.code === 0 && !result.timedOut) return;
    // talosctl 1.13's drain errors (drain.go, nodedrain): after the install, before the reboot.
    const drain =
      /error (?:cordoning|draining) node[^\n]*|error creating Kubernetes client for drain[^\n]*|error resolving Kubernetes node name[^\n]*/.exec(
        `${result.stderr}\n${result.stdout}`,
      );
    if (drain && !result.timedOut) throw new DrainFailedError(node, drain[0].slice(0, 300));
    throw this.tool.failure(result, toolCall);
  }

  async upgradeKubernetes(via: string, upgrade: KubernetesUpgrade): Promise<string> {
    const args = ["upgrade-k8s", "--to", upgrade.to.replace(/^v/, "")];
    if (upgrade.dryRun) args.push("--dry-run");
    if (upgrade.noPrune) args.push("--manifests-no-prune");
    // The flags of talosctl v1.13's upgrade-k8s (cmd/talosctl/cmd/talos/upgrade-k8s.go).
    for (const component of KUBERNETES_COMPONENTS) {
      const image = upgrade.images?.[component];
      if (image !== undefined) args.push(`--${component}-image`, image);
    }
    const { progress } = this.options;
    return this.exec(args, {
      node: via,
      timeoutMs: upgrade.timeoutMs,
      stream: !upgrade.dryRun,
      // It prints each manifest object it applies with its diff, a Secret it creates unmasked.
      ...(progress ? { progress: withoutSecretDiffs(progress) } : {}),
    });
  }

  async etcdForfeitLeadership(node: string): Promise<void> {
    await this.exec(["etcd", "forfeit-leadership"], { node, timeoutMs: TALOSCTL_TIMEOUTS.query });
  }

  async etcdLeave(node: string): Promise<void> {
    await this.exec(["etcd", "leave"], { node, timeoutMs: TALOSCTL_TIMEOUTS.query });
  }

  async etcdRemoveMember(via: string, memberId: string): Promise<void> {
    await this.exec(["etcd", "remove-member", memberId], {
      node: via,
      timeoutMs: TALOSCTL_TIMEOUTS.query,
    });
  }

  async etcdVolume(node: string): Promise<string | undefined> {
    const output = await this.getResource(node, "volumestatus", "ETCD");
    return output === undefined ? undefined : parseVolumeType(output);
  }

  async wipeVolumes(node: string, labels: readonly string[]): Promise<void> {
    await this.exec(
      ["reset", "--graceful=false", "--reboot", `--system-labels-to-wipe=${labels.join(",")}`],
      { node, timeoutMs: TALOSCTL_TIMEOUTS.reset, stream: true },
    );
  }

  /**
   * `talosctl get <type> <id> --output yaml`, or undefined when the node has no such resource, or
   * its Talos no such resource type: talosctl then fails with gRPC's NotFound (the server's "doesn't
   * exist", or its own "is not registered" for a type the node's Talos does not define).
   */
  private async getResource(node: string, type: string, id: string): Promise<string | undefined> {
    const call = { node, timeoutMs: TALOSCTL_TIMEOUTS.query };
    const { args, shown } = this.command(["get", type, id, "--output", "yaml"], call);
    const toolCall = { timeoutMs: call.timeoutMs, shown, fix: "Fix the cause and rerun" };
    const result = await this.tool.start(args, toolCall);
    if (result.code === 0 && !result.timedOut) return result.stdout;
    if (!result.timedOut && /code = NotFound/.test(result.stderr)) return undefined;
    throw this.tool.failure(result, toolCall);
  }

  async bootstrapRecover(node: string, snapshot: string, skipHashCheck: boolean): Promise<void> {
    const args = ["bootstrap", `--recover-from=${snapshot}`];
    if (skipHashCheck) args.push("--recover-skip-hash-check");
    await this.exec(args, { node, timeoutMs: TALOSCTL_TIMEOUTS.bootstrap });
  }

  async etcdStatus(node: string): Promise<EtcdMemberStatus> {
    return parseEtcdStatus(
      await this.exec(["etcd", "status"], { node, timeoutMs: TALOSCTL_TIMEOUTS.query }),
    );
  }

  async etcdAlarms(via: string): Promise<EtcdAlarm[]> {
    return parseEtcdAlarms(
      await this.exec(["etcd", "alarm", "list"], { node: via, timeoutMs: TALOSCTL_TIMEOUTS.query }),
    );
  }

  async etcdDefrag(node: string): Promise<void> {
    // A defragmentation rewrites the whole database file: minutes for a large one.
    await this.exec(["etcd", "defrag"], { node, timeoutMs: TALOSCTL_TIMEOUTS.etcdSnapshot });
  }
}

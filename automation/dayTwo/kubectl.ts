// What `rollout` and `replace-node` ask of Kubernetes: cordon and drain a node before its reboot or
// its removal (Talos' reboot sequence stops the pods but neither cordons nor drains, and a node
// taken away stops them the same way, so without this nothing is evicted and no
// PodDisruptionBudget is consulted) and, for a reboot, uncordon it once it is back and healthy.
// Production runs kubectl with the cluster's own kubeconfig (a 0600 temp file, removed when the
// roll ends), so the operator's ~/.kube/config and its current context never matter; tests give
// a fake runner.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { writePrivateFile } from "../files";
import { goDuration } from "./clock";
import type { CliContext } from "../context";
import type { ClusterNode } from "./cluster";
import { type DayTwoDeps, progressSink } from "./deps";
import { TALOSCTL_TIMEOUTS } from "./talosctl";
import { type CommandRunner, Tool } from "./toolRunner";

/** Cordons, drains and uncordons Kubernetes nodes (by their Kubernetes node name). */
export interface NodeDrainer {
  /** Checks that kubectl can be started; rejects with an install hint (exit 5) when it cannot. */
  check(): Promise<void>;
  /** Marks the node unschedulable, so pods evicted from its batch mates do not land on it. */
  cordon(node: string): Promise<void>;
  /**
   * `kubectl drain`: cordons, then evicts every pod but DaemonSet and mirror pods through the
   * eviction API (PodDisruptionBudgets are respected), waiting at most `timeoutMs`.
   */
  drain(node: string, timeoutMs: number): Promise<void>;
  /**
   * Whether the node's kubelet reports Ready (its Node's Ready condition is True); rejects when the
   * API cannot be asked (a rebooting control plane's API server may be down for a while).
   */
  ready(node: string): Promise<boolean>;
  /** Makes the node schedulable again. */
  uncordon(node: string): Promise<void>;
  /**
   * Deletes the Node object of a node whose machine is gone (its kubelet would register it again
   * otherwise); a Node that is not there is no error.
   */
  deleteNode(node: string): Promise<void>;
}

/** Options of the kubectl-backed drainer. */
interface KubectlDrainerOptions {
  /** A 0600 file holding the cluster's kubeconfig. */
  readonly kubeconfig: string;
  /** The kubectl program (KUBECTL, else `kubectl` on PATH). */
  readonly binary?: string;
  readonly run?: CommandRunner;
  /** kubectl's progress (the pods it evicts) goes here. */
  readonly progress?: (text: string) => void;
  /** What a missing kubectl means for the command (`no node was rebooted`). */
  readonly whenMissing: string;
}

/** The fix when kubectl is missing and a drain was asked for. */
const KUBECTL_INSTALL_HINT =
  "Install kubectl (https://kubernetes.io/docs/tasks/tools/) on PATH or set KUBECTL to its path, or pass --no-drain to go on without draining (pods are stopped, not evicted)";

/** How long cordon, uncordon and `version --client` may take. */
const KUBECTL_QUERY_MS = 60_000;

/** A NodeDrainer that runs kubectl. */
export class KubectlDrainer implements NodeDrainer {
  private readonly tool: Tool;

  constructor(private readonly options: KubectlDrainerOptions) {
    this.tool = new Tool({
      name: "kubectl",
      binary: options.binary ?? "kubectl",
      installHint: KUBECTL_INSTALL_HINT,
      whenMissing: options.whenMissing,
      ...(options.run ? { run: options.run } : {}),
      ...(options.progress ? { progress: options.progress } : {}),
    });
  }

  private exec(args: readonly string[], timeoutMs: number, stream = false): Promise<string> {
    // Only the file's path is passed, never its content; messages name neither.
    return this.tool.exec([...args, "--kubeconfig", this.options.kubeconfig], {
      timeoutMs,
      stream,
      shown: `kubectl ${args.join(" ")}`,
    });
  }

  async check(): Promise<void> {
    await this.exec(["version", "--client"], KUBECTL_QUERY_MS);
  }

  async cordon(node: string): Promise<void> {
    await this.exec(["cordon", node], KUBECTL_QUERY_MS);
  }

  async drain(node: string, timeoutMs: number): Promise<void> {
    // kubectl gives up by itself at --timeout (and says so); it is stopped only after a margin.
    await this.exec(
      [
        "drain",
        node,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        `--timeout=${goDuration(timeoutMs)}`,
      ],
      timeoutMs + TALOSCTL_TIMEOUTS.margin,
      true,
    );
  }

  async ready(node: string): Promise<boolean> {
    const status = await this.exec(
      ["get", "node", node, "-o", 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'],
      KUBECTL_QUERY_MS,
    );
    return status.trim() === "True";
  }

  async uncordon(node: string): Promise<void> {
    await this.exec(["uncordon", node], KUBECTL_QUERY_MS);
  }

  async deleteNode(node: string): Promise<void> {
    await this.exec(["delete", "node", node, "--ignore-not-found"], KUBECTL_QUERY_MS);
  }
}

/** One line per Node: its name and its Ready condition's status. */
const NODES_JSONPATH =
  'jsonpath={range .items[*]}{.metadata.name}{" "}{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}';

/** The fix when kubectl is missing and the Kubernetes API must be checked. */
const KUBECTL_LISTER_INSTALL_HINT =
  "Install kubectl (https://kubernetes.io/docs/tasks/tools/) on PATH or set KUBECTL to its path";

/** A Node as the API server lists it: its name and whether its kubelet reports Ready. */
export interface ListedNode {
  readonly name: string;
  readonly ready: boolean;
}

/** `kubectl get nodes` through one kubeconfig: the API server answering that kubeconfig's credentials. */
export class KubectlNodeLister {
  private readonly tool: Tool;

  constructor(private readonly options: KubectlDrainerOptions) {
    this.tool = new Tool({
      name: "kubectl",
      binary: options.binary ?? "kubectl",
      installHint: KUBECTL_LISTER_INSTALL_HINT,
      whenMissing: options.whenMissing,
      ...(options.run ? { run: options.run } : {}),
      ...(options.progress ? { progress: options.progress } : {}),
    });
  }

  /** Checks that kubectl can be started; rejects with an install hint (exit 5) when it cannot. */
  async check(): Promise<void> {
    await this.tool.exec(["version", "--client"], {
      timeoutMs: KUBECTL_QUERY_MS,
      shown: "kubectl version --client",
    });
  }

  /**
   * Every Node with its Ready condition; rejects when the API server cannot be reached or refuses
   * the kubeconfig (its client certificate not from a CA it accepts, its CA not the server's).
   */
  async nodes(): Promise<ListedNode[]> {
    const args = ["get", "nodes", "-o", NODES_JSONPATH];
    const text = await this.tool.exec([...args, "--kubeconfig", this.options.kubeconfig], {
      timeoutMs: KUBECTL_QUERY_MS,
      shown: `kubectl ${args.join(" ")}`,
    });
    return text
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== "")
      .map((line) => {
        const [name, status] = line.split(/\s+/);
        return { name, ready: status === "True" };
      });
  }
}

/** The node lister of a command: KUBECTL or `kubectl`, the test's runner, progress on stderr. */
export function kubectlNodeLister(
  ctx: CliContext,
  deps: DayTwoDeps,
  kubeconfig: string,
  whenMissing: string,
): KubectlNodeLister {
  const run = deps.kubectl;
  const binary = ctx.env.KUBECTL;
  return new KubectlNodeLister({
    kubeconfig,
    whenMissing,
    ...(binary ? { binary } : {}),
    ...(run ? { run } : {}),
    progress: progressSink(ctx),
  });
}

/**
 * The Kubernetes name of a node: Talos registers the kubelet under its hostname (lowercased, `_`
 * as `-`: nodename.FromHostname), and the program sets each node's hostname to its stack name, a
 * lowercase DNS label, so the two are the same.
 */
export function kubernetesNodeName(node: ClusterNode): string {
  return node.name;
}

/** The kubectl drainer of a command: KUBECTL or `kubectl`, the test's runner, progress on stderr. */
export function kubectlDrainer(
  ctx: CliContext,
  deps: DayTwoDeps,
  kubeconfig: string,
  whenMissing: string,
): NodeDrainer {
  const run = deps.kubectl;
  const binary = ctx.env.KUBECTL;
  return new KubectlDrainer({
    kubeconfig,
    whenMissing,
    ...(binary ? { binary } : {}),
    ...(run ? { run } : {}),
    progress: progressSink(ctx),
  });
}

/**
 * Runs `fn` with the cluster's kubeconfig in a private temp file (a 0700 folder, the file 0600),
 * removed when `fn` ends (also when the process exits early).
 */
export async function withKubeconfig<T>(
  deps: Pick<DayTwoDeps, "tmpDir">,
  kubeconfig: string,
  fn: (file: string) => Promise<T>,
): Promise<T> {
  const dir = fs.mkdtempSync(path.join(deps.tmpDir ?? os.tmpdir(), "platform-kube-"));
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
  process.on("exit", cleanup);
  try {
    const file = path.join(dir, "kubeconfig");
    writePrivateFile(file, kubeconfig);
    return await fn(file);
  } finally {
    process.off("exit", cleanup);
    cleanup();
  }
}

// What `up` of the foundation checks before the engine changes anything, all in one report: the
// stack file's versions against the last deployment (no cluster needed), the config contract against
// what the nodes run, and that etcd is never bootstrapped a second time.
import type { OutputMap } from "@pulumi/pulumi/automation";
import * as path from "node:path";
import { bootstrapHistory } from "../../../components/talos/bootstrapRecord";
import { compareMinor, minorOf, parseVersion } from "../../../components/talos/versions";
import type { CliContext } from "../../context";
import { formatProblem, errorReason } from "../../errors";
import type { StackFile } from "../../layers";
import type { StackOperations, StateResource } from "../../workspace";
import { type DeployedCluster, deployedCluster, readStackCluster } from "../cluster";
import { dayTwoDeps } from "../deps";
import { withTalos } from "../run";
import { kubernetesStep, kubernetesSupported, talosStep } from "../upgradePath";
import { type CheckResult, type PreflightReport, fromVerdict, report } from "./report";

/** The version pair a change starts from or goes to. */
interface Versions {
  readonly talos: string;
  readonly kubernetes: string;
}

/**
 * The version checks, from `current` to `target`: the Talos path, the Kubernetes path and whether
 * the target Talos supports both Kubernetes versions (Talos goes first, so it runs both).
 */
function versionChecks(current: Versions, target: Versions, env = "<env>"): CheckResult[] {
  return [
    fromVerdict("talos-path", talosStep(current.talos, target.talos, env)),
    fromVerdict("kubernetes-path", kubernetesStep(current.kubernetes, target.kubernetes)),
    fromVerdict(
      "kubernetes-supported",
      kubernetesSupported(target.talos, [current.kubernetes, target.kubernetes]),
    ),
  ];
}

/** The cluster key of the foundation project in a stack file. */
const CLUSTER_KEY = "talos-platform:cluster";

/**
 * A move of the config contract (the Talos version whose machine-config defaults and features are
 * generated: `configContract`, which defaults to `talosVersion`) to a newer minor than the one last
 * deployed. Nodes must run at least that minor before `up` pushes configs of the new contract.
 */
interface ContractMove {
  /** The contract last deployed (the `configContract` output; `talosVersion` before it existed). */
  readonly from: string;
  /** The contract the stack file asks for now. */
  readonly to: string;
  /** Whether the stack file sets `configContract` itself (else it follows `talosVersion`). */
  readonly pinned: boolean;
}

/** The contract a stack file asks for: `configContract`, else `talosVersion`; undefined when unset. */
function stackContract(
  stackFile: StackFile,
): { readonly contract: string; readonly pinned: boolean } | undefined {
  const cluster = stackFile.config[CLUSTER_KEY] as
    { talosVersion?: unknown; configContract?: unknown } | undefined;
  if (cluster?.configContract !== undefined && cluster.configContract !== null) {
    return { contract: String(cluster.configContract), pinned: true };
  }
  if (cluster?.talosVersion === undefined || cluster.talosVersion === null) return undefined;
  return { contract: String(cluster.talosVersion), pinned: false };
}

/** The contract move `up` would make, or undefined when it stays on (or below) the deployed minor. */
export function contractMove(
  stackFile: StackFile,
  deployed: OutputMap | undefined,
): ContractMove | undefined {
  const wanted = stackContract(stackFile);
  const before = deployed?.configContract?.value ?? deployed?.talosVersion?.value;
  if (!wanted || typeof before !== "string") return undefined;
  const to = parseVersion(wanted.contract);
  const from = parseVersion(before);
  if (!to || !from || compareMinor(minorOf(to), minorOf(from)) <= 0) return undefined;
  return { from: before, to: wanted.contract, pinned: wanted.pinned };
}

/**
 * The config part of preflight, for `up`: the stack file's versions against those the stack last
 * deployed (its `talosVersion` and `kubernetesVersion` outputs). Needs no cluster and no talosctl.
 * With no outputs yet (a first `up`) only Kubernetes support by the stack's Talos is checked. A
 * change of `talosVersion` under a pinned `configContract` passes with a note: `up` does not upgrade
 * nodes, `upgrade talos` does. A newer config contract is checked against the nodes themselves
 * (see {@link contractMove} and upPreflight.ts).
 */
export function preflightForUp(
  stackFile: StackFile,
  deployed: OutputMap | undefined,
): PreflightReport {
  const display = path.basename(stackFile.path);
  const cluster = stackFile.config[CLUSTER_KEY] as
    { talosVersion?: unknown; kubernetesVersion?: unknown } | undefined;
  const desired = {
    talos: String(cluster?.talosVersion ?? ""),
    kubernetes: String(cluster?.kubernetesVersion ?? ""),
  };
  if (desired.talos === "" || desired.kubernetes === "") {
    // The program's own validation names the missing keys; nothing to compare here.
    return report([
      {
        id: "stack-versions",
        status: "skipped",
        detail: `${display} sets no ${CLUSTER_KEY} talosVersion/kubernetesVersion`,
      },
    ]);
  }
  const before = {
    talos: deployed?.talosVersion?.value,
    kubernetes: deployed?.kubernetesVersion?.value,
  };
  if (typeof before.talos !== "string" || typeof before.kubernetes !== "string") {
    return report([
      fromVerdict("kubernetes-supported", kubernetesSupported(desired.talos, [desired.kubernetes])),
    ]);
  }
  const current = { talos: before.talos, kubernetes: before.kubernetes };
  const env = /^Pulumi\.(.+)\.ya?ml$/.exec(display)?.[1] ?? "<env>";
  const notes: string[] = [];
  const a = parseVersion(current.talos);
  const b = parseVersion(desired.talos);
  if (a && b && a.compare(b) !== 0 && contractMove(stackFile, deployed) === undefined) {
    notes.push(
      `${display} moves talosVersion from ${current.talos} (deployed) to ${desired.talos}: \`up\` does not upgrade nodes. ` +
        `If they do not run ${desired.talos} yet (\`npm run platform -- preflight ${env}\` shows it), run \`npm run platform -- upgrade talos ${env} --to ${desired.talos}\` first`,
    );
  }
  const k = parseVersion(current.kubernetes);
  const l = parseVersion(desired.kubernetes);
  if (k && l && k.compare(l) !== 0) {
    notes.push(
      `${display} moves kubernetesVersion from ${current.kubernetes} (deployed) to ${desired.kubernetes}: ` +
        `the control plane is upgraded by \`npm run platform -- upgrade kubernetes ${env} --to ${desired.kubernetes}\`, not by \`up\``,
    );
  }
  return report(versionChecks(current, desired, env), notes);
}

/** The type token of the provider's Bootstrap resource (terraform-provider-talos `talos_machine_bootstrap`). */
export const BOOTSTRAP_TYPE = "talos:machine/bootstrap:Bootstrap";
/** The type token of the cluster's machine secrets (protected, kept for the cluster's lifetime). */
export const SECRETS_TYPE = "talos:machine/secrets:Secrets";

/** What `up` needs to check one foundation stack. */
interface UpPreflightInput {
  readonly stack: Pick<StackOperations, "outputs" | "stateResources">;
  readonly stackFile: StackFile;
  readonly env: string;
}

/**
 * Bootstrapping etcd happens once per cluster, on its first control plane. The provider's Bootstrap
 * resource has no read (it never learns that a cluster runs) and its create calls the Bootstrap API
 * until it succeeds; Talos accepts that on any control plane whose etcd data folder is empty, such as
 * a replacement of the first one, which would then start a second, empty etcd cluster. So once the
 * cluster was bootstrapped, `up` must never create that resource again. The stack's outputs record
 * that it was, by the rule the program's own guard applies (components/talos/bootstrapRecord.ts: the
 * `etcdBootstrap` output, or for stacks last deployed before it a `kubeconfig`), and the outputs of
 * the last `up` stay in the state when resources are deleted from it. The program refuses such a
 * create itself, when the engine gets to it; this check says so before anything changes, together
 * with every other problem. It applies while the cluster's machine secrets are in the state (without
 * them `up` builds a new cluster).
 */
function bootstrapOnce(
  stackFile: StackFile,
  resources: readonly StateResource[],
  deployed: OutputMap | undefined,
): CheckResult {
  const has = (type: string) => resources.some((r) => r.type === type);
  const history = bootstrapHistory(
    Object.fromEntries(Object.entries(deployed ?? {}).map(([key, output]) => [key, output.value])),
  );
  if (!has(SECRETS_TYPE) || !history.bootstrapped) {
    return { id: "bootstrap-once", status: "ok", detail: "a new cluster: up bootstraps etcd once" };
  }
  if (has(BOOTSTRAP_TYPE)) {
    return {
      id: "bootstrap-once",
      status: "ok",
      detail: "etcd was bootstrapped; the state keeps its Bootstrap, so up never runs it again",
    };
  }
  const nodes = stackFile.config["talos-platform:nodes"];
  const first = Array.isArray(nodes)
    ? (nodes as { name?: unknown; role?: unknown }[]).find((n) => n.role === "controlplane")?.name
    : undefined;
  return {
    id: "bootstrap-once",
    status: "failed",
    detail: formatProblem({
      what: "etcd bootstrap",
      problem: `the state has lost the cluster's ${BOOTSTRAP_TYPE} resource although etcd was bootstrapped (${history.evidence}), so up would bootstrap etcd again`,
      got: `${typeof first === "string" ? first : "the first control plane"} would be bootstrapped: a second, empty etcd beside the running one`,
      fix: "Put the Bootstrap back into the state before any up: import the state export taken before the change (pulumi stack import --file <export>), then remove the lost node's resources the way docs/runbooks/lost-proxmox-host.md step 6 shows, which keeps it",
    }),
  };
}

/** The deployed nodes on an older minor than a contract's (or an unreadable version), as `name vX.Y.Z`. */
function olderThan(
  contract: string,
  versions: readonly { name: string; talos: string }[],
): string[] {
  const minor = minorOf(parseVersion(contract)!);
  return versions
    .filter((v) => {
      // A node may run a pre-release (v1.14.0-beta.1): its minor is what counts.
      const nodeMinor = /^v?(\d+\.\d+)\.\d+/.exec(v.talos)?.[1];
      return nodeMinor === undefined || compareMinor(nodeMinor, minor) < 0;
    })
    .map((v) => `${v.name} ${v.talos}`);
}

/**
 * A newer config contract against what the nodes run. Talos generates a machine config for one
 * contract (a Talos minor); a node on an older minor does not know that contract's defaults and
 * documents. So `up` asks every deployed node its version (talosctl, only when the contract moves)
 * and refuses while any runs an older minor.
 */
async function contractCheck(
  ctx: CliContext,
  move: ContractMove,
  cluster: () => DeployedCluster,
  display: string,
  env: string,
): Promise<CheckResult> {
  const key = move.pinned ? "configContract" : "talosVersion (configContract is not pinned)";
  const keep = `or pin configContract: ${move.from} in ${display} to keep the deployed contract`;
  const failed = (problem: string, got: string, fix: string): CheckResult => ({
    id: "config-contract",
    status: "failed",
    detail: formatProblem({ what: `${display} ${key}`, problem, got, fix }),
  });
  let deployed: DeployedCluster;
  try {
    deployed = cluster();
  } catch (error) {
    return failed(
      `moves the config contract from ${move.from} to ${move.to}, and the nodes' versions cannot be asked`,
      JSON.stringify(errorReason(error)),
      `Deploy with the current program first, ${keep}`,
    );
  }
  const deps = dayTwoDeps(ctx);
  const answers = await withTalos(deps, deployed, async (client) => {
    try {
      await client.clientVersion();
    } catch (error) {
      return { error: errorReason(error) };
    }
    const versions: { name: string; talos: string }[] = [];
    const silent: string[] = [];
    for (const node of deployed.nodes) {
      try {
        versions.push({ name: node.name, talos: await client.nodeVersion(node.address) });
      } catch (error) {
        silent.push(`${node.name} (${errorReason(error)})`);
      }
    }
    return { versions, silent };
  });
  if ("error" in answers) {
    return failed(
      `moves the config contract from ${move.from} to ${move.to}; checking that the nodes run it needs talosctl`,
      JSON.stringify(answers.error),
      `Install talosctl, ${keep}`,
    );
  }
  const older = olderThan(move.to, answers.versions);
  const upgrade = `npm run platform -- upgrade talos ${env} --to ${deployed.stack.talosVersion}`;
  if (older.length > 0) {
    return failed(
      `moves the config contract from ${move.from} to ${move.to}, newer than what nodes run; up would push them configs they do not know`,
      [...older, ...answers.silent.map((s) => `not asked: ${s}`)].join(", "),
      `Upgrade the nodes first (${upgrade}), ${keep}`,
    );
  }
  if (answers.silent.length > 0) {
    return failed(
      `moves the config contract from ${move.from} to ${move.to}, and not every node could be asked its version`,
      answers.silent.join("; "),
      `Bring them back and rerun, ${keep}`,
    );
  }
  return {
    id: "config-contract",
    status: "ok",
    detail: `the config contract moves from ${move.from} to ${move.to}; every node runs Talos ${minorOf(parseVersion(move.to)!)} or newer`,
  };
}

/** Every check `up` of the foundation makes before the engine runs, in one report. */
export async function upPreflight(
  ctx: CliContext,
  input: UpPreflightInput,
): Promise<PreflightReport> {
  const outputs = await input.stack.outputs();
  const deployed = Object.keys(outputs).length > 0 ? outputs : undefined;
  const config = preflightForUp(input.stackFile, deployed);
  const checks: CheckResult[] = [...config.checks];
  const display = path.basename(input.stackFile.path);
  const move = contractMove(input.stackFile, deployed);
  if (move) {
    checks.push(
      await contractCheck(
        ctx,
        move,
        () => deployedCluster(readStackCluster(ctx.repoRoot, input.env), outputs),
        display,
        input.env,
      ),
    );
  }
  checks.push(bootstrapOnce(input.stackFile, await input.stack.stateResources(), deployed));
  return report(checks, config.notes);
}

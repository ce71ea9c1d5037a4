// What `up` of the foundation checks before anything changes, all in one report: the stack file's
// versions against the last deployment (one minor at a time, never down, a supported pair; no cluster
// needed), and that etcd is never bootstrapped a second time. The config contract needs no check
// here: the program never generates one newer than the nodes run (components/talos/convergence.ts).
import type { OutputMap } from "@pulumi/pulumi/automation";
import * as path from "node:path";
import { bootstrapHistory } from "../../../components/talos/bootstrapRecord";
import { formatProblem } from "../../errors";
import type { StackFile } from "../../layers";
import type { StackOperations, StateResource } from "../../workspace";
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
 * The config part of preflight, for `up`: the stack file's versions against those the stack last
 * deployed (its `talosVersion` and `kubernetesVersion` outputs). Needs no cluster and no talosctl.
 * With no outputs yet (a first `up`) only Kubernetes support by the stack's Talos is checked. The
 * steps themselves run after this check passed (automation/dayTwo/convergeUp.ts).
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
  return report(versionChecks(current, desired, env));
}

/** The type token of the provider's Bootstrap resource (terraform-provider-talos `talos_machine_bootstrap`). */
export const BOOTSTRAP_TYPE = "talos:machine/bootstrap:Bootstrap";
/** The type token of the cluster's machine secrets (protected, kept for the cluster's lifetime). */
export const SECRETS_TYPE = "talos:machine/secrets:Secrets";

/** What `up` needs to check one foundation stack. */
interface UpPreflightInput {
  readonly stack: Pick<StackOperations, "stateResources">;
  /** The stack's outputs (none before its first `up`). */
  readonly outputs: OutputMap;
  readonly stackFile: StackFile;
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

/** Every check `up` of the foundation makes before anything changes, in one report. */
export async function upPreflight(input: UpPreflightInput): Promise<PreflightReport> {
  const deployed = Object.keys(input.outputs).length > 0 ? input.outputs : undefined;
  const config = preflightForUp(input.stackFile, deployed);
  return report([
    ...config.checks,
    bootstrapOnce(input.stackFile, await input.stack.stateResources(), deployed),
  ]);
}

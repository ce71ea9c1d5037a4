// What `up` of a running cluster would disrupt, in the order it would do it: the sequenced steps the
// stack file asks for (components/talos/convergence.ts's rules, the same the program applies) and,
// from the engine's preview, every machine created, replaced, updated or deleted and every node
// whose config changes. `preview` prints it and the pull-request summary shows it, so a reviewer of
// a version bump sees which nodes reboot, in which order, next to the resource diff.
import type { EngineEvent, OutputMap } from "@pulumi/pulumi/automation";
import { converge, lastDeployment } from "../../components/talos/convergence";
import { parseUrn } from "../engineEvents";
import { readStackFile, resolveLayer } from "../layers";
import { rollBatches, workerBatchSize } from "./batches";
import { type ClusterNode, readStackCluster } from "./cluster";

/** What the plan is made from. */
export interface DisruptionInput {
  readonly env: string;
  /** The stack file's cluster and nodes, in file order. */
  readonly stack: {
    readonly name: string;
    readonly talosVersion: string;
    readonly kubernetesVersion: string;
    readonly nodes: readonly {
      readonly name: string;
      readonly role: "controlplane" | "worker";
      readonly platform?: string;
    }[];
  };
  /** cluster.applyMode as the stack resolves it. */
  readonly applyMode: string;
  readonly maxUnavailableWorkers: number;
  /** The stack's outputs before the run: what the last `up` recorded. */
  readonly outputs: OutputMap;
  /** The preview's events. */
  readonly events: readonly EngineEvent[];
}

/** How the engine run would touch one node. */
type NodeChange = "create" | "replace" | "update" | "delete";

const CHANGE_RANK: Readonly<Record<NodeChange, number>> = {
  update: 1,
  create: 2,
  replace: 3,
  delete: 4,
};

/** The Talos resource that pushes a node's config (`<cluster>-<node>-config`). */
const CONFIG_APPLY = "talos:machine/configurationApply:ConfigurationApply";

/** One image schematic per platform and architecture (`<cluster>-schematic-<platform>[-<arch>]`). */
const SCHEMATIC = "talos:imageFactory/schematic:Schematic";

const list = (names: readonly string[]) => names.join(", ");
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * The steps `up` would take, in order, one line each: empty when the changes touch no running node,
 * undefined when no cluster runs yet (its first `up` disrupts nothing).
 */
export function planDisruption(input: DisruptionInput): string[] | undefined {
  const values = Object.fromEntries(Object.entries(input.outputs).map(([k, o]) => [k, o.value]));
  const last = lastDeployment(values);
  if (!last.exists) return undefined;
  const { stack } = input;
  const deployed = deployedNodes(values);
  const plan = converge(
    { ...stack, configContract: stack.talosVersion, nodes: stack.nodes },
    last,
    {},
    input.env,
  );
  const pending = plan.pending;
  // The nodes that exist and stay, in the order every roll takes them.
  const staying = stack.nodes.filter((n) => deployed.has(n.name));
  const rollOrder = describeRoll(staying, input.maxUnavailableWorkers);
  const steps: string[] = [];
  if (pending.talos) {
    steps.push(
      `Talos ${pending.talos.from} → ${pending.talos.to}: an etcd snapshot, then each node drained, upgraded and rebooted: ${rollOrder}`,
    );
  }
  if (pending.kubernetes) {
    const cps = staying.filter((n) => n.role === "controlplane").map((n) => n.name);
    steps.push(
      `Kubernetes ${pending.kubernetes.from} → ${pending.kubernetes.to} (talosctl upgrade-k8s): an etcd snapshot; kube-apiserver, kube-controller-manager and kube-scheduler restarted on ${list(cps)} one node at a time, then kube-proxy, then the kubelet of each of the ${plural(staying.length, "node")} one at a time; no node reboots`,
    );
  }
  const wantedCps = stack.nodes.filter((n) => n.role === "controlplane").map((n) => n.name);
  const removing = last.controlPlanes.filter((name) => !wantedCps.includes(name));
  const adding = wantedCps.filter((name) => !last.controlPlanes.includes(name));
  const inStack = new Set(stack.nodes.map((n) => n.name));
  const dropped = [...deployed].filter((name) => !inStack.has(name));
  if (dropped.length > 0) {
    steps.push(
      `drain: ${list(dropped)} cordoned and drained (kubectl; their pods move to the other nodes, disruption budgets respected)`,
    );
  }
  if (removing.length > 0) {
    steps.push(
      `etcd: ${list(removing)} ${removing.length === 1 ? "leaves" : "leave one after the other"} (an etcd snapshot first; quorum without ${removing.length === 1 ? "it" : "each"} checked, leadership handed over)${wantedCps.length === 1 ? "; a single control plane stays, which needs --allow-single-control-plane" : ""}`,
    );
  }
  const engine = engineChanges(input, deployed);
  if (engine.length > 0) steps.push(`the engine run: ${engine.join("; ")}`);
  if (dropped.length > 0) {
    steps.push(
      `kubernetes: the Node ${dropped.length === 1 ? "object" : "objects"} of ${list(dropped)} deleted, then the cluster's health checked (the engine run cannot check it while Kubernetes lists them)`,
    );
  }
  if (adding.length > 0) {
    steps.push(
      adding.length === 1
        ? `etcd: ${adding[0]} joins as a learner; up waits until it is a voting member and the cluster healthy`
        : `etcd: ${adding[0]} joins in the engine run, then ${list(adding.slice(1))}, one engine run each, each once the one before is a voting member and the cluster healthy`,
    );
  }
  const configChanged = changedConfigs(input, deployed);
  if (configChanged.length > 0 && input.applyMode === "staged_if_needing_reboot") {
    steps.push(
      `rollout: of ${list(configChanged)}, the nodes whose change needs a reboot (Talos decides when the config is applied; the others take it at once) are drained and rebooted (up --no-rollout leaves them for a later rollout): ${describeRoll(
        stack.nodes.filter((n) => configChanged.includes(n.name)),
        input.maxUnavailableWorkers,
      )}`,
    );
  }
  const schematic = schematicNodes(input, staying);
  if (schematic.length > 0) {
    steps.push(
      `a new image schematic (extensions, kernel arguments) for ${list(schematic.map((n) => n.name))}: after the engine run, each drained, upgraded to it on the Talos version it runs and rebooted: ${describeRoll(schematic, input.maxUnavailableWorkers)}; then an engine run records their new installers`,
    );
  }
  return steps;
}

/** The names of the nodes the last `up` recorded. */
function deployedNodes(values: Readonly<Record<string, unknown>>): Set<string> {
  const nodes = values.nodes as Record<string, Record<string, unknown> | undefined> | undefined;
  return new Set([...Object.keys(nodes?.controlplane ?? {}), ...Object.keys(nodes?.worker ?? {})]);
}

/** "3 control planes one at a time (cp-1, cp-2, cp-3), then 3 workers in 2 batches (w-1 w-2 | w-3)". */
function describeRoll(
  nodes: readonly { readonly name: string; readonly role: "controlplane" | "worker" }[],
  maxUnavailable: number,
): string {
  const asCluster = nodes.map((n) => ({ ...n, address: "" }) as ClusterNode);
  const batches = rollBatches(asCluster, maxUnavailable);
  const cps = batches.filter((b) => b[0].role === "controlplane").map((b) => b[0].name);
  const workerBatches = batches.filter((b) => b[0].role === "worker");
  const workers = workerBatches.flat().length;
  const parts = [
    ...(cps.length > 0
      ? [`${plural(cps.length, "control plane")} one at a time (${list(cps)})`]
      : []),
    ...(workers > 0
      ? [
          workerBatches.length === workers
            ? `${plural(workers, "worker")} one at a time (${list(workerBatches.flat().map((n) => n.name))})`
            : `${plural(workers, "worker")} in ${plural(workerBatches.length, "batch", "batches")} of at most ${maxUnavailable} (${workerBatches.map((b) => b.map((n) => n.name).join(" ")).join(" | ")})`,
        ]
      : []),
  ];
  return parts.join(", then ") || "no node";
}

/**
 * The running nodes whose platform's schematic the preview creates, replaces or deletes (a change
 * of extensions or kernel arguments, or back to the plain image): `up` upgrades them to it.
 */
function schematicNodes<N extends DisruptionInput["stack"]["nodes"][number]>(
  input: DisruptionInput,
  staying: readonly N[],
): N[] {
  const platforms = new Set<string>();
  const prefix = `${input.stack.name}-schematic-`;
  for (const event of input.events) {
    const metadata = event.resourcePreEvent?.metadata;
    if (!metadata || metadata.type !== SCHEMATIC || !asNodeChange(metadata.op)) continue;
    const { name } = parseUrn(metadata.urn);
    if (name.startsWith(prefix)) platforms.add(name.slice(prefix.length).split("-")[0]);
  }
  return staying.filter((n) => n.platform !== undefined && platforms.has(n.platform));
}

/** The node a resource belongs to: its name is `<cluster>-<node>` or `<cluster>-<node>-<part>`. */
function nodeOf(
  resourceName: string,
  cluster: string,
  nodes: readonly string[],
): string | undefined {
  let found: string | undefined;
  for (const node of nodes) {
    const base = `${cluster}-${node}`;
    if (resourceName !== base && !resourceName.startsWith(`${base}-`)) continue;
    if (!found || node.length > found.length) found = node;
  }
  return found;
}

/** Each step's resource, by node: the strongest change to its machine, and whether its config changes. */
function changesByNode(
  input: DisruptionInput,
  deployed: ReadonlySet<string>,
): Map<string, { machine?: NodeChange; config: boolean; properties: Set<string> }> {
  const names = [...new Set([...input.stack.nodes.map((n) => n.name), ...deployed])];
  const byNode = new Map<
    string,
    { machine?: NodeChange; config: boolean; properties: Set<string> }
  >();
  for (const event of input.events) {
    const metadata = event.resourcePreEvent?.metadata;
    if (!metadata) continue;
    const { type, name } = parseUrn(metadata.urn);
    const node = nodeOf(name, input.stack.name, names);
    if (!node) continue;
    const change = asNodeChange(metadata.op);
    if (!change) continue;
    const entry = byNode.get(node) ?? { config: false, properties: new Set<string>() };
    byNode.set(node, entry);
    if (type === CONFIG_APPLY) {
      // The first-install push (`-install`) ignores every later change.
      if (name.endsWith("-config") && change === "update") entry.config = true;
      continue;
    }
    if (type.startsWith("pulumi:") || type.startsWith("platform:")) continue;
    if (!entry.machine || CHANGE_RANK[change] > CHANGE_RANK[entry.machine]) entry.machine = change;
    if (change === "update" || change === "replace") {
      for (const key of metadata.diffs ?? []) entry.properties.add(key);
    }
  }
  return byNode;
}

function asNodeChange(op: string): NodeChange | undefined {
  switch (op) {
    case "create":
      return "create";
    case "update":
      return "update";
    case "delete":
      return "delete";
    case "replace":
    case "create-replacement":
    case "delete-replaced":
      return "replace";
    default:
      return undefined;
  }
}

/** The nodes that exist and whose config the engine run pushes again. */
function changedConfigs(input: DisruptionInput, deployed: ReadonlySet<string>): string[] {
  const byNode = changesByNode(input, deployed);
  return input.stack.nodes
    .map((n) => n.name)
    .filter((name) => deployed.has(name) && byNode.get(name)?.config === true);
}

/** The engine run's changes to nodes, grouped: deleted, created, replaced, updated, reconfigured. */
function engineChanges(input: DisruptionInput, deployed: ReadonlySet<string>): string[] {
  const byNode = changesByNode(input, deployed);
  const inStack = new Set(input.stack.nodes.map((n) => n.name));
  const order = [
    ...input.stack.nodes.map((n) => n.name),
    ...[...deployed].filter((n) => !inStack.has(n)),
  ];
  const pick = (test: (name: string) => boolean) => order.filter((name) => test(name));
  const lines: string[] = [];
  const deleted = pick((name) => deployed.has(name) && !inStack.has(name));
  if (deleted.length > 0) lines.push(`deletes ${list(deleted)} (machine and config)`);
  const created = pick((name) => !deployed.has(name) && byNode.get(name)?.machine === "create");
  if (created.length > 0) lines.push(`creates and configures ${list(created)}`);
  const replaced = pick((name) => deployed.has(name) && byNode.get(name)?.machine === "replace");
  if (replaced.length > 0) {
    const why = replaced.map((name) => {
      const props = [...(byNode.get(name)?.properties ?? [])];
      return props.length > 0 ? `${name} (${props.join(", ")})` : name;
    });
    lines.push(
      `replaces the machine of ${list(why)}: the old one deleted first, the new one installed and configured (its workloads restart elsewhere)`,
    );
  }
  const updated = pick((name) => deployed.has(name) && byNode.get(name)?.machine === "update");
  if (updated.length > 0) {
    const why = updated.map((name) => {
      const props = [...(byNode.get(name)?.properties ?? [])];
      return props.length > 0 ? `${name} (${props.join(", ")})` : name;
    });
    lines.push(
      `updates the machine of ${list(why)} in place, without a reboot (docs/platforms.md: what takes effect when)`,
    );
  }
  const configs = changedConfigs(input, deployed);
  if (configs.length > 0) {
    lines.push(
      input.applyMode === "staged_if_needing_reboot"
        ? `pushes a changed config to ${list(configs)}: applied at once where Talos can, staged where it needs a reboot`
        : `pushes a changed config to ${list(configs)} (applyMode ${input.applyMode})`,
    );
  }
  return lines;
}

/** The plan of `up` for a stack, from its stack file, its outputs and a preview's events. */
export function stackDisruption(
  repoRoot: string,
  env: string,
  outputs: OutputMap,
  events: readonly EngineEvent[],
): string[] | undefined {
  const values = Object.fromEntries(Object.entries(outputs).map(([k, o]) => [k, o.value]));
  if (!lastDeployment(values).exists) return undefined;
  const layer = resolveLayer(repoRoot, "foundation");
  const cluster = readStackFile(layer, env).config[`${layer.project}:cluster`] as
    { applyMode?: unknown } | undefined;
  return planDisruption({
    env,
    stack: readStackCluster(repoRoot, env),
    applyMode:
      typeof cluster?.applyMode === "string" ? cluster.applyMode : "staged_if_needing_reboot",
    maxUnavailableWorkers: workerBatchSize(repoRoot, env),
    outputs,
    events,
  });
}

/** The plan as the terminal shows it after a preview. */
export function formatDisruption(target: string, steps: readonly string[]): string {
  if (steps.length === 0) {
    return `up ${target} would disrupt no running node: none is rebooted, upgraded, replaced or changes etcd membership\n`;
  }
  return [
    `up ${target} would, in order (versions as the state records them; up asks the nodes first):`,
    ...steps.map((step, i) => `  ${i + 1}. ${step}`),
    "",
  ].join("\n");
}

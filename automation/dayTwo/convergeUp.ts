// `up` of a running cluster, the CLI's half of one owner (components/talos/convergence.ts has the
// program's). Before the engine runs, the nodes are asked what they run, so the state learns a
// change made outside `up` (an `upgrade talos --no-write`, an older branch) and nothing is
// downgraded; then every version the stack file asks for goes through its sequenced, gated step
// (the Talos roll, then Kubernetes' upgrade-k8s), and the engine run that follows is told what they
// reached (TALOS_PLATFORM_CONVERGE), so it generates the configs for it.
import type { OutputMap } from "@pulumi/pulumi/automation";
import type { BootRecord } from "../../components/talos/bootRecords";
import { type ConvergeRequest, converge, lastDeployment } from "../../components/talos/convergence";
import { compareMinor, minorOf, parseVersion } from "../../components/talos/versions";
import type { CliContext } from "../context";
import { ExitCode, UserError, errorReason } from "../errors";
import type { StackOperations } from "../workspace";
import { workerBatchSize } from "./batches";
import { controlPlanes, readStackCluster } from "./cluster";
import { upgradeKubernetesSteps } from "./kubernetesUpgrade";
import { kubectlDrainer, withKubeconfig } from "./kubectl";
import {
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_KEEP_SNAPSHOTS,
  DEFAULT_ROLLOUT_TIMEOUTS,
} from "./options";
import { drainNode, withNodeDrainer } from "./replaceNodeDrain";
import { type DayTwoSession, runDayTwo } from "./run";
import { healthGate, quorum, sameVersion } from "./gates";
import { captureBootRecord } from "./rebootState";
import { imageSchematic, imageTag, retagImage } from "./talosctlOutput";
import { rollTalos } from "./talosUpgrade";

/** What the nodes reported: each one's Talos and kubelet version, or why it could not be asked. */
interface Running {
  readonly talos: ReadonlyMap<string, string>;
  readonly kubelets: ReadonlyMap<string, string>;
  readonly silent: readonly string[];
}

async function askNodes(session: DayTwoSession): Promise<Running> {
  const talos = new Map<string, string>();
  const kubelets = new Map<string, string>();
  const silent: string[] = [];
  for (const node of session.cluster.nodes) {
    try {
      talos.set(node.name, await session.client.nodeVersion(node.address));
      kubelets.set(node.name, await session.client.kubeletVersion(node.address));
    } catch (error) {
      silent.push(`${node.name} (${errorReason(error)})`);
    }
  }
  return { talos, kubelets, silent };
}

/**
 * What each node booted with, where it can still be read: the nodes that run the config they
 * booted, on a Talos with a BootID (rebootState.ts). Read before the engine pushes, which on Talos
 * 1.14 replaces the running config at once; the engine run exports them (bootRecords.ts), so a later
 * rollout or drift can tell a boot-time change that waits for a reboot. A node that cannot be asked
 * keeps the record the outputs have.
 */
async function readBootRecords(
  session: DayTwoSession,
  versions: ReadonlyMap<string, string>,
): Promise<Record<string, BootRecord>> {
  const records: Record<string, BootRecord> = {};
  for (const node of session.cluster.nodes) {
    // Only Talos 1.14 has a BootID, and applies every change at once; 1.13 stages what needs a reboot.
    const version = parseVersion(versions.get(node.name) ?? "");
    if (!version || compareMinor(minorOf(version), "1.14") < 0) continue;
    try {
      const record = await captureBootRecord(session.client, node.address);
      if (record) records[node.name] = record;
    } catch {
      // Not asked: the last record stands, and a node without one is reported as unknown.
    }
  }
  return records;
}

/** The one value every entry has, or undefined when they differ (a roll stopped partway). */
function common(values: Iterable<string>): string | undefined {
  const list = [...values];
  return list.length > 0 && list.every((v) => sameVersion(v, list[0])) ? list[0] : undefined;
}

/** What the nodes run, as the engine run records it. */
function recorded(session: DayTwoSession, running: Running): ConvergeRequest {
  const installers: Record<string, string> = {};
  for (const node of session.cluster.nodes) {
    const version = running.talos.get(node.name);
    const image = node.installerImage && version && retagImage(node.installerImage, version);
    if (image) installers[node.name] = image;
  }
  const talos = running.silent.length === 0 ? common(running.talos.values()) : undefined;
  const kubernetes = running.silent.length === 0 ? common(running.kubelets.values()) : undefined;
  return {
    installers,
    ...(talos ? { talosVersion: talos } : {}),
    ...(kubernetes ? { kubernetesVersion: kubernetes } : {}),
  };
}

/**
 * Brings a running cluster to the stack file's versions, step by gated step, and resolves to what
 * the engine run must be told; for a new cluster (no outputs yet) nothing is asked or done.
 */
export async function convergeFoundation(
  ctx: CliContext,
  input: {
    readonly env: string;
    readonly outputs: OutputMap;
    readonly installCli: boolean;
    /** Lets upgrade-k8s overwrite live objects of the bootstrap manifests (its dry run lists them). */
    readonly allowManifestOverwrite?: boolean;
  },
): Promise<ConvergeRequest> {
  const values = Object.fromEntries(Object.entries(input.outputs).map(([k, o]) => [k, o.value]));
  const last = lastDeployment(values);
  if (!last.exists) return {};
  const stack = readStackCluster(ctx.repoRoot, input.env);
  const target = `foundation/${input.env}`;
  return runDayTwo(
    ctx,
    {
      command: "up",
      env: input.env,
      installCli: input.installCli,
      withinUp: { outputs: input.outputs },
    },
    async (session) => {
      const { out } = session;
      const running = await askNodes(session);
      let request: ConvergeRequest = {
        ...recorded(session, running),
        bootRecords: await readBootRecords(session, running.talos),
      };
      const plan = converge(
        { ...stack, configContract: stack.talosVersion, nodes: stack.nodes },
        { ...last, ...withRequest(last, request) },
        {},
        input.env,
      ).pending;
      const steps = [
        plan.talos && `Talos ${plan.talos.from} → ${plan.talos.to}`,
        plan.kubernetes && `Kubernetes ${plan.kubernetes.from} → ${plan.kubernetes.to}`,
      ].filter((step): step is string => typeof step === "string");
      if (steps.length === 0) return request;
      if (running.silent.length > 0) {
        throw new UserError(
          {
            what: `up ${target}`,
            problem: `the stack file asks for ${steps.join(" and ")}, and not every node could be asked what it runs`,
            got: running.silent.join("; "),
            fix: "Bring the nodes back (npm run platform -- preflight shows them), then rerun; nothing was changed",
          },
          ExitCode.refused,
        );
      }
      out(`up ${target}: ${steps.join(", then ")}, each gated, before the engine runs`);
      const maxUnavailable = workerBatchSize(ctx.repoRoot, input.env);
      if (plan.talos) {
        const upgraded = await rollTalos(session, {
          env: input.env,
          to: plan.talos.to,
          resume: true,
          maxUnavailable,
          keepSnapshots: DEFAULT_KEEP_SNAPSHOTS,
          resumeCommand: `npm run platform -- up ${input.env}`,
          stackFileNote: `the state still records Talos ${plan.talos.from} for the nodes not upgraded`,
        });
        request = {
          ...request,
          talosVersion: plan.talos.to,
          installers: { ...request.installers, ...Object.fromEntries(upgraded) },
          // The roll rebooted nodes: their new boots, read before upgrade-k8s applies configs.
          bootRecords: {
            ...request.bootRecords,
            ...(await readBootRecords(
              session,
              new Map(session.cluster.nodes.map((n) => [n.name, plan.talos!.to])),
            )),
          },
        };
      }
      if (plan.kubernetes) {
        await upgradeKubernetesSteps(session, {
          env: input.env,
          to: plan.kubernetes.to,
          keepSnapshots: DEFAULT_KEEP_SNAPSHOTS,
          allowManifestOverwrite: input.allowManifestOverwrite === true,
          rerun: `npm run platform -- up ${input.env}`,
        });
        request = { ...request, kubernetesVersion: plan.kubernetes.to };
      }
      return request;
    },
  );
}

/** The last deployment as the request records it (the nodes' own versions win over the state's). */
function withRequest(
  last: ReturnType<typeof lastDeployment>,
  request: ConvergeRequest,
): Partial<ReturnType<typeof lastDeployment>> {
  return {
    ...(request.talosVersion ? { talosVersion: request.talosVersion } : {}),
    ...(request.kubernetesVersion ? { kubernetesVersion: request.kubernetesVersion } : {}),
    installerImages: { ...last.installerImages, ...request.installers },
  };
}

/** How long a new control plane may take to become a voting member, and how often to look. */
const JOIN_TIMEOUT_MS = 15 * 60_000;
const JOIN_POLL_MS = 10_000;

/** What `up` needs to take its next control-plane step. */
export interface ControlPlaneStepInput {
  readonly env: string;
  /** The stack's outputs now (after the engine run, when there was one). */
  readonly outputs: OutputMap;
  readonly installCli: boolean;
  readonly stack: Pick<StackOperations, "stateResources" | "unprotect">;
  /** A change that leaves a single control plane (3→1) is an explicit choice. */
  readonly allowSingleControlPlane: boolean;
  /** What the engine runs are told; the removals add their nodes to `leftEtcd`. */
  readonly request: ConvergeRequest;
  /**
   * After an engine run, the control planes it added (they must become voters before the next
   * joins); undefined before the first run.
   */
  readonly justAdded?: readonly string[];
}

/**
 * etcd's membership changes one member at a time, each change complete before the next (etcd's
 * runtime-reconfiguration guide). Before the first engine run, every control plane the stack file
 * drops leaves etcd here, one after the other (quorum without it checked, leadership handed over,
 * `etcd leave`), and its resources are unprotected so that run removes its machine; a replacement
 * thus removes the old member before the new one joins, as etcd's guide advises. New control
 * planes join one per engine run, each a healthy voting member before the next run adds another.
 * Resolves to the request of the next engine run, or undefined when no other run is needed.
 */
export async function controlPlaneStep(
  ctx: CliContext,
  input: ControlPlaneStepInput,
): Promise<ConvergeRequest | undefined> {
  const values = Object.fromEntries(Object.entries(input.outputs).map(([k, o]) => [k, o.value]));
  const last = lastDeployment(values);
  if (!last.exists) return undefined;
  const stack = readStackCluster(ctx.repoRoot, input.env);
  const wanted = stack.nodes.filter((n) => n.role === "controlplane").map((n) => n.name);
  const adding = wanted.filter((name) => !last.controlPlanes.includes(name));
  const removing = last.controlPlanes.filter((name) => !wanted.includes(name));
  const names = new Set(stack.nodes.map((n) => n.name));
  const removedWorkers = last.workers.filter((name) => !names.has(name));
  const before = input.justAdded === undefined;
  const removals = removing.length + removedWorkers.length;
  if (before ? adding.length + removals === 0 : input.justAdded!.length === 0) {
    return undefined;
  }
  const target = `foundation/${input.env}`;
  if (before && removing.length > 0 && wanted.length === 1 && !input.allowSingleControlPlane) {
    throw new UserError(
      {
        what: `up ${target}`,
        problem: `the stack file keeps a single control plane: etcd and the Kubernetes API go down with it on every reboot`,
        got: `${last.controlPlanes.length} → 1 (removing ${removing.join(", ")})`,
        fix: "Rerun with --allow-single-control-plane if that is what you mean; nothing was changed",
      },
      ExitCode.refused,
    );
  }
  return runDayTwo(
    ctx,
    { command: "up", env: input.env, installCli: input.installCli, withinUp: input },
    async (session) => {
      if (!before || removals === 0) {
        await waitForVoters(session, last.controlPlanes, { health: true });
        if (adding.length === 0) return undefined;
        session.out(`up ${target}: ${adding[0]} joins etcd in this engine run`);
        return input.request;
      }
      if (removing.length > 0) {
        // A control plane is often removed because it is failing: only the ones that stay must be
        // voters, and quorum without each leaving one is checked as it leaves.
        const staying = last.controlPlanes.filter((name) => !removing.includes(name));
        await waitForVoters(session, staying, { health: false });
        await session.snapshot(DEFAULT_KEEP_SNAPSHOTS);
      }
      // Their pods move to the other nodes first (disruption budgets respected), as before a reboot.
      await drainRemoved(session, target, [...removedWorkers, ...removing]);
      const left: string[] = [];
      for (const name of removing) {
        await leaveEtcd(session, name, left);
        left.push(name);
      }
      if (left.length === 0) return input.request;
      const urns = ownedBy(
        (await input.stack.stateResources()).map((r) => r.urn),
        session.cluster.clusterName,
        left,
      );
      await input.stack.unprotect(urns);
      session.out(
        `up ${target}: ${left.join(", ")} left etcd; the engine run removes ${left.length === 1 ? "its machine" : "their machines"} (${urns.length} resources unprotected)`,
      );
      return { ...input.request, leftEtcd: left };
    },
  );
}

/**
 * Cordons and drains each node the stack file drops (one that is not Ready, or does not answer, is
 * left as it is). Needs the cluster's kubeconfig and kubectl: refused before anything otherwise.
 */
async function drainRemoved(
  session: DayTwoSession,
  target: string,
  names: readonly string[],
): Promise<void> {
  const nodes = session.cluster.nodes.filter((n) => names.includes(n.name));
  if (nodes.length === 0) return;
  await withNodeDrainer(
    session,
    `up ${target}`,
    true,
    async (drainer) => {
      for (const node of nodes) {
        await drainNode(session, drainer!, node, {
          what: `up ${target}`,
          drainTimeoutMs: DEFAULT_DRAIN_TIMEOUT_MS,
        });
      }
    },
    {
      fixWithoutKubeconfig:
        "Run up once with the nodes kept, so the outputs record the kubeconfig, then remove them",
      whenMissing: "it drains a node before up removes it; nothing was changed",
    },
  );
}

/**
 * After the engine run that deleted the machines of `removed`: their Kubernetes Node objects are
 * deleted (no kubelet registers them again now), then the cluster's health is checked, which the
 * run itself had to skip (components/talos/convergence.ts).
 */
export async function afterRemovals(
  ctx: CliContext,
  input: {
    readonly env: string;
    readonly outputs: OutputMap;
    readonly installCli: boolean;
    readonly removed: readonly string[];
  },
): Promise<void> {
  if (input.removed.length === 0) return;
  const target = `foundation/${input.env}`;
  await runDayTwo(
    ctx,
    { command: "up", env: input.env, installCli: input.installCli, withinUp: input },
    async (session) => {
      const { cluster, deps, client, out } = session;
      if (cluster.kubeconfig) {
        await withKubeconfig(deps, cluster.kubeconfig, async (file) => {
          const drainer = kubectlDrainer(
            ctx,
            deps,
            file,
            "it deletes the removed nodes' Node objects",
          );
          for (const name of input.removed) await drainer.deleteNode(name);
        });
        out(
          `kubernetes: deleted the Node ${input.removed.length === 1 ? "object" : "objects"} of ${input.removed.join(", ")}`,
        );
      }
      const health = await healthGate(client, cluster, DEFAULT_ROLLOUT_TIMEOUTS.healthMs);
      if (!health.ok) {
        throw new UserError(
          {
            what: `up ${target}`,
            problem: `the cluster is not healthy after ${input.removed.join(", ")} ${input.removed.length === 1 ? "was" : "were"} removed`,
            got: health.reason,
            fix: "Fix it (npm run platform -- preflight shows what), then rerun up",
          },
          ExitCode.failed,
        );
      }
      out(`up ${target}: ${input.removed.join(", ")} removed; cluster healthy`);
    },
  );
}

/** The URNs of the resources the program names after these nodes (`<cluster>-<node>[-<part>]`). */
function ownedBy(urns: readonly string[], cluster: string, nodes: readonly string[]): string[] {
  return urns.filter((urn) => {
    const name = urn.slice(urn.lastIndexOf("::") + 2);
    return nodes.some(
      (node) => name === `${cluster}-${node}` || name.startsWith(`${cluster}-${node}-`),
    );
  });
}

/**
 * How `preview` shows a run that removes control planes as `up` will make it: the program told
 * they left etcd (as `up` tells it once they did), and their resources, protected until `up`
 * unprotects them after the leave, left out of the preview (the engine would refuse to plan their
 * deletion). Undefined when the stack file removes none.
 */
export async function previewOfRemovals(
  ctx: CliContext,
  input: {
    readonly env: string;
    readonly outputs: OutputMap;
    readonly stack: Pick<StackOperations, "stateResources">;
  },
): Promise<{ converge: ConvergeRequest; exclude: string[]; note: string } | undefined> {
  const values = Object.fromEntries(Object.entries(input.outputs).map(([k, o]) => [k, o.value]));
  const last = lastDeployment(values);
  if (!last.exists) return undefined;
  const stack = readStackCluster(ctx.repoRoot, input.env);
  const wanted = stack.nodes.filter((n) => n.role === "controlplane").map((n) => n.name);
  const removing = last.controlPlanes.filter((name) => !wanted.includes(name));
  if (removing.length === 0) return undefined;
  const cluster = typeof values.clusterName === "string" ? values.clusterName : stack.name;
  const exclude = ownedBy(
    (await input.stack.stateResources()).map((r) => r.urn),
    cluster,
    removing,
  );
  return {
    converge: { leftEtcd: removing },
    exclude,
    note: `the preview leaves out the ${exclude.length} resources of ${removing.join(", ")}, which up deletes once ${removing.length === 1 ? "it has" : "they have"} left etcd (the engine refuses to plan deleting a protected control plane before that)`,
  };
}

/** Waits until each of `names` is a voting etcd member (not a learner), then for the cluster's health. */
async function waitForVoters(
  session: DayTwoSession,
  names: readonly string[],
  options: { readonly health: boolean },
): Promise<void> {
  const { client, deps, cluster, out } = session;
  const cps = controlPlanes(cluster);
  const start = deps.clock.now();
  let missing: string[] = [];
  for (;;) {
    try {
      const via = cps.find((cp) => names.includes(cp.name)) ?? cps[0];
      const members = await client.etcdMembers(via.address);
      missing = names.filter((name) => !members.some((m) => m.hostname === name && !m.learner));
    } catch (error) {
      missing = [`(members unreadable: ${errorReason(error)})`];
    }
    if (missing.length === 0) break;
    if (deps.clock.now() - start >= JOIN_TIMEOUT_MS) {
      throw new UserError(
        {
          what: `up foundation/${cluster.stack.env}`,
          problem: `etcd did not make every control plane a voting member within ${JOIN_TIMEOUT_MS / 60_000} minutes`,
          got: missing.join(", "),
          fix: `Check it (talosctl etcd members; talosctl -n <node> service etcd), then rerun up: it goes on from here`,
        },
        ExitCode.failed,
      );
    }
    await deps.clock.sleep(JOIN_POLL_MS);
  }
  if (!options.health) return;
  const health = await healthGate(client, cluster, DEFAULT_ROLLOUT_TIMEOUTS.healthMs);
  if (!health.ok) {
    throw new UserError(
      {
        what: `up foundation/${cluster.stack.env}`,
        problem: "the cluster is not healthy after etcd's membership changed",
        got: health.reason,
        fix: "Fix it (npm run platform -- preflight shows what), then rerun up",
      },
      ExitCode.failed,
    );
  }
  out(`etcd: ${names.join(", ")} voting members; cluster healthy`);
}

/**
 * Takes one control plane out of etcd: the others (not those that `left` already) must keep quorum
 * without it, it hands leadership over, and leaves (or, when it does not answer, another control
 * plane removes its member).
 */
async function leaveEtcd(
  session: DayTwoSession,
  name: string,
  left: readonly string[],
): Promise<void> {
  const { client, cluster, out } = session;
  const node = cluster.nodes.find((n) => n.name === name);
  const others = controlPlanes(cluster).filter((cp) => cp.name !== name && !left.includes(cp.name));
  const via = others[0];
  const changed =
    left.length === 0
      ? "nothing was changed"
      : `${left.join(", ")} left etcd already; rerun up to go on from here`;
  const fail = (problem: string, got: string, fix: string): never => {
    throw new UserError(
      { what: `up foundation/${cluster.stack.env}`, problem, got, fix: `${fix}; ${changed}` },
      ExitCode.refused,
    );
  };
  if (!via) return fail(`${name} is the only control plane`, name, "Keep it");
  const members = await client.etcdMembers(via.address);
  const member = members.find((m) => m.hostname === name);
  if (!member) {
    out(`etcd: ${name} is not a member (it left already)`);
    return;
  }
  const voters = members.filter((m) => !m.learner).length;
  let healthy = 0;
  for (const cp of others) {
    try {
      const status = await client.service(cp.address, "etcd");
      if (status.state === "Running" && status.health === "OK") healthy++;
    } catch {
      // not healthy
    }
  }
  const need = quorum(voters - 1);
  if (healthy < need) {
    fail(
      `removing ${name} from etcd would leave ${healthy} healthy members of ${voters - 1}; quorum needs ${need}`,
      `${healthy} healthy`,
      "Bring the other control planes back first",
    );
  }
  let reachable = node !== undefined;
  if (node) {
    try {
      await client.etcdForfeitLeadership(node.address);
      await client.etcdLeave(node.address);
      out(`etcd: ${name} handed leadership over and left (talosctl etcd leave)`);
    } catch (error) {
      reachable = false;
      out(`etcd: ${name} could not leave by itself (${errorReason(error)})`);
    }
  }
  if (!reachable) {
    await client.etcdRemoveMember(via.address, member.id);
    out(`etcd: ${via.name} removed ${name}'s member ${member.id}`);
  }
  const after = await client.etcdMembers(via.address);
  if (after.some((m) => m.id === member.id)) {
    fail(
      `${name} is still an etcd member after leaving`,
      member.id,
      `Check talosctl -n ${via.address} etcd members`,
    );
  }
}

/** The images whose schematic (extensions, kernel arguments) differs, by node name. */
export function schematicChanges(outputs: OutputMap): Map<string, string> {
  const running = (outputs.installerImages?.value ?? {}) as Record<string, string>;
  const desired = (outputs.desiredInstallers?.value ?? {}) as Record<string, string>;
  const changes = new Map<string, string>();
  for (const [name, image] of Object.entries(running)) {
    const wanted = desired[name];
    const tag = imageTag(image);
    if (wanted === undefined || tag === undefined) continue;
    // Only the schematic changes here: the version stays the one the node runs.
    const target = retagImage(wanted, tag);
    if (target === undefined || repository(target) === repository(image)) continue;
    changes.set(name, target);
  }
  return changes;
}

/** An image without its tag or digest. */
function repository(image: string): string {
  return image.replace(/@.*$/, "").replace(/:[^:/]+$/, "");
}

/**
 * After the engine run registered a new schematic (the outputs' desiredInstallers): the nodes whose
 * installer it changes are upgraded to it through the Talos roll (control planes one at a time,
 * workers in batches, each gated), a node already booted on it skipped; resolves to the request of
 * the engine run that records their new installers, or undefined when no schematic changed.
 */
export async function schematicStep(
  ctx: CliContext,
  input: {
    readonly env: string;
    readonly outputs: OutputMap;
    readonly installCli: boolean;
    readonly request: ConvergeRequest;
  },
): Promise<ConvergeRequest | undefined> {
  const changes = schematicChanges(input.outputs);
  if (changes.size === 0) return undefined;
  const version = input.outputs.talosVersion?.value as string;
  const target = `foundation/${input.env}`;
  // The roll throws where it stops; resolved, every listed node runs its new image.
  await runDayTwo(
    ctx,
    { command: "up", env: input.env, installCli: input.installCli, withinUp: input },
    async (session) => {
      session.out(
        `up ${target}: a new image schematic for ${[...changes.keys()].join(", ")}: each node upgraded to it on Talos ${version}, gated`,
      );
      return rollTalos(session, {
        env: input.env,
        to: version,
        resume: true,
        maxUnavailable: workerBatchSize(ctx.repoRoot, input.env),
        keepSnapshots: DEFAULT_KEEP_SNAPSHOTS,
        resumeCommand: `npm run platform -- up ${input.env}`,
        stackFileNote: "the state still records the old schematic for the nodes not upgraded",
        images: changes,
        booted: async (node, image) => {
          const wanted = imageSchematic(image);
          return wanted !== undefined && (await session.client.schematic(node.address)) === wanted;
        },
      });
    },
  );
  return {
    ...input.request,
    installers: { ...input.request.installers, ...Object.fromEntries(changes) },
  };
}

// `up` of a running cluster, the CLI's half of one owner (components/talos/convergence.ts has the
// program's). Before the engine runs, the nodes are asked what they run, so the state learns a
// change made outside `up` (an `upgrade talos --no-write`, an older branch) and nothing is
// downgraded; then every version the stack file asks for goes through its sequenced, gated step
// (the Talos roll, then Kubernetes' upgrade-k8s), and the engine run that follows is told what they
// reached (TALOS_PLATFORM_CONVERGE), so it generates the configs for it.
import type { OutputMap } from "@pulumi/pulumi/automation";
import { type ConvergeRequest, converge, lastDeployment } from "../../components/talos/convergence";
import type { CliContext } from "../context";
import { ExitCode, UserError, errorReason } from "../errors";
import type { StackOperations } from "../workspace";
import { workerBatchSize } from "./batches";
import { controlPlanes, readStackCluster } from "./cluster";
import { upgradeKubernetesSteps } from "./kubernetesUpgrade";
import { DEFAULT_KEEP_SNAPSHOTS, DEFAULT_ROLLOUT_TIMEOUTS } from "./options";
import { type DayTwoSession, runDayTwo } from "./run";
import { healthGate, quorum, sameVersion } from "./gates";
import { retagImage } from "./talosctlOutput";
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
  input: { readonly env: string; readonly outputs: OutputMap; readonly installCli: boolean },
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
      let request = recorded(session, running);
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
        };
      }
      if (plan.kubernetes) {
        await upgradeKubernetesSteps(session, {
          env: input.env,
          to: plan.kubernetes.to,
          keepSnapshots: DEFAULT_KEEP_SNAPSHOTS,
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
  /** 3→1 (or any change to a single control plane) is an explicit choice. */
  readonly allowSingleControlPlane: boolean;
  /** What the engine runs are told; a removal adds its node to `leftEtcd`. */
  readonly request: ConvergeRequest;
  /** Control planes the engine run just before added (they must become voters first). */
  readonly justAdded: readonly string[];
}

/**
 * One change of etcd's membership per engine run, as etcd allows it: every recorded control plane
 * must be a healthy voting member first (a new one has joined); then either another run adds the
 * next new control plane, or a removed one leaves etcd here (quorum after its removal checked,
 * leadership handed over, `etcd leave`) and the next run removes its machine. Resolves to the
 * request of the next engine run, or undefined when membership is the stack file's.
 */
export async function controlPlaneStep(
  ctx: CliContext,
  input: ControlPlaneStepInput,
): Promise<ConvergeRequest | undefined> {
  const values = Object.fromEntries(Object.entries(input.outputs).map(([k, o]) => [k, o.value]));
  const last = lastDeployment(values);
  if (!last.exists) return undefined;
  const stack = readStackCluster(ctx.repoRoot, input.env);
  const plan = converge(
    { ...stack, configContract: stack.talosVersion, nodes: stack.nodes },
    last,
    input.request,
    input.env,
  ).pending;
  const membership = plan.addControlPlanes.length + plan.removeControlPlanes.length;
  if (membership === 0 && input.justAdded.length === 0) return undefined;
  const target = `foundation/${input.env}`;
  return runDayTwo(
    ctx,
    { command: "up", env: input.env, installCli: input.installCli, withinUp: input },
    async (session) => {
      await waitForVoters(session, last.controlPlanes);
      if (membership === 0) return undefined;
      if (plan.addControlPlanes.length > 0) {
        session.out(`up ${target}: next, ${plan.addControlPlanes[0]} joins etcd`);
        return input.request;
      }
      const leaving = plan.removeControlPlanes[0];
      const remaining = last.controlPlanes.length - 1;
      if (remaining === 1 && !input.allowSingleControlPlane) {
        throw new UserError(
          {
            what: `up ${target}`,
            problem: `removing ${leaving} leaves a single control plane: etcd and the API go down with it on every reboot`,
            got: `${last.controlPlanes.length} → 1`,
            fix: `Rerun with --allow-single-control-plane if that is what you mean; nothing was changed`,
          },
          ExitCode.refused,
        );
      }
      await leaveEtcd(session, leaving);
      const cluster = session.cluster.clusterName;
      const own = (urn: string) => {
        const name = urn.slice(urn.lastIndexOf("::") + 2);
        return name === `${cluster}-${leaving}` || name.startsWith(`${cluster}-${leaving}-`);
      };
      const urns = (await input.stack.stateResources()).map((r) => r.urn).filter(own);
      await input.stack.unprotect(urns);
      session.out(
        `up ${target}: ${leaving} left etcd; its machine is removed next (${urns.length} resources unprotected)`,
      );
      return { ...input.request, leftEtcd: [...(input.request.leftEtcd ?? []), leaving] };
    },
  );
}

/** Waits until each of `names` is a voting etcd member (not a learner), then for the cluster's health. */
async function waitForVoters(session: DayTwoSession, names: readonly string[]): Promise<void> {
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
  const health = await healthGate(client, cluster, DEFAULT_ROLLOUT_TIMEOUTS.healthMs);
  if (!health.ok) {
    throw new UserError(
      {
        what: `up foundation/${cluster.stack.env}`,
        problem: "the cluster is not healthy after etcd's membership changed",
        got: JSON.stringify(health.reason),
        fix: "Fix it (npm run platform -- preflight shows what), then rerun up",
      },
      ExitCode.failed,
    );
  }
  out(`etcd: ${names.join(", ")} voting members; cluster healthy`);
}

/**
 * Takes one control plane out of etcd: the others must keep quorum without it, it hands leadership
 * over, and leaves (or, when it does not answer, another control plane removes its member).
 */
async function leaveEtcd(session: DayTwoSession, name: string): Promise<void> {
  const { client, cluster, out } = session;
  const node = cluster.nodes.find((n) => n.name === name);
  const others = controlPlanes(cluster).filter((cp) => cp.name !== name);
  const via = others[0];
  const fail = (problem: string, got: string, fix: string): never => {
    throw new UserError(
      { what: `up foundation/${cluster.stack.env}`, problem, got, fix },
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
      "Bring the other control planes back first; nothing was changed",
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
      `Check talosctl -n ${via.address} etcd members, then rerun up`,
    );
  }
}

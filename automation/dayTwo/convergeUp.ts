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
import { workerBatchSize } from "./batches";
import { readStackCluster } from "./cluster";
import { upgradeKubernetesSteps } from "./kubernetesUpgrade";
import { DEFAULT_KEEP_SNAPSHOTS } from "./options";
import { type DayTwoSession, runDayTwo } from "./run";
import { sameVersion } from "./gates";
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

// `rotate-ca <env> --talos | --kubernetes`: Talos' CA rotation (talosctl rotate-ca: the new CA
// accepted, then issuing, then the old one removed) as steps the state follows. Each step is a
// record in the stack file (cluster.caRotation, components/talos/caRotation.ts) applied by an
// ordinary `up` of the foundation, which renders every node's CAs from it and re-issues the
// talosconfig and the kubeconfig; node by node, control planes first, each step gated on the
// cluster's health through the talosconfig the run just exported and, for --kubernetes, on the API
// server listing every node Ready through the kubeconfig it just exported (so the exports are
// proven valid at every step). A stop leaves the record where the last step put it: running the
// command again goes on from there.
import * as fs from "node:fs";
import * as path from "node:path";
import { parseDocument } from "yaml";
import { caRotationRecordSchema } from "../../components/config/schema";
import { rotationSteps } from "../../components/talos/caRotation";
import type { CaRotationRecord } from "../../components/spec/types";
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, UserError, errorReason } from "../errors";
import { writeFileAtomically } from "../files";
import { checkDayTwoGuard } from "../guards";
import { readStackFile, resolveLayer } from "../layers";
import { readStackCluster } from "./cluster";
import { formatDuration } from "./clock";
import type { DeployedCluster } from "./cluster";
import type { DayTwoDeps } from "./deps";
import { healthGate } from "./gates";
import { type ListedNode, kubectlNodeLister, kubernetesNodeName, withKubeconfig } from "./kubectl";
import { runDayTwo, withTalos } from "./run";

/** The CAs `rotate-ca` rotates. */
export type RotatedCa = "talos" | "kubernetes";

/** `rotate-ca` as asked. */
export interface RotateCaRequest {
  readonly env: string;
  readonly ca: RotatedCa;
  readonly installCli: boolean;
  readonly healthTimeoutMs: number;
  /**
   * One ordinary `up` of the foundation (the CLI's own, with its preflight, gates and rollout),
   * handed in by the command line: the commands sit above the day-two steps.
   */
  readonly up: (commandLine: string) => Promise<ExitCodeValue>;
}

const CLUSTER_KEY = "talos-platform:cluster";

/** The record the stack file holds for `ca`, or undefined when it was never rotated. */
export function readRotationRecord(file: string, ca: RotatedCa): CaRotationRecord | undefined {
  const document = parseDocument(fs.readFileSync(file, "utf8"));
  const raw: unknown = document.getIn(["config", CLUSTER_KEY, "caRotation", ca]);
  if (raw === undefined) return undefined;
  const json = (raw as { toJSON?: () => unknown }).toJSON?.() ?? raw;
  const parsed = caRotationRecordSchema.safeParse(json);
  if (!parsed.success) {
    throw new UserError({
      what: `${path.basename(file)} config.${CLUSTER_KEY}.caRotation.${ca}`,
      problem: "is not a rotation record rotate-ca wrote",
      got: JSON.stringify(json),
      fix: "Restore it from Git (the last committed record), then run rotate-ca again",
    });
  }
  return parsed.data;
}

/**
 * Writes `record` as the stack file's record for `ca`, keeping the rest of the file's comments and
 * layout (the yaml Document API), atomically.
 */
export function writeRotationRecord(file: string, ca: RotatedCa, record: CaRotationRecord): void {
  const document = parseDocument(fs.readFileSync(file, "utf8"));
  if (!document.hasIn(["config", CLUSTER_KEY])) {
    throw new UserError({
      what: `${path.basename(file)} config.${CLUSTER_KEY}`,
      problem: "is missing, so there is no cluster whose CA could be rotated",
      got: "nothing",
      fix: "Run rotate-ca against an environment with a deployed cluster",
    });
  }
  const value = {
    generation: record.generation,
    phase: record.phase,
    ...(record.nodes ? { nodes: [...record.nodes] } : {}),
  };
  document.setIn(["config", CLUSTER_KEY, "caRotation", ca], document.createNode(value));
  writeFileAtomically(file, document.toString({ flowCollectionPadding: false, lineWidth: 0 }));
}

/** How a step reads in the progress lines. */
export function describeStep(step: CaRotationRecord, all: readonly string[]): string {
  const reached = step.nodes ?? all;
  const what: Record<CaRotationRecord["phase"], string> = {
    generated: "new CA generated (no node changes)",
    accepted: "new CA accepted beside the old one",
    issuing: "new CA issuing, old one still accepted",
    removed: "old CA removed",
  };
  return `generation ${step.generation}: ${what[step.phase]}${step.phase === "generated" ? "" : ` on ${reached.at(-1)}${step.nodes ? "" : " (every node now)"}`}`;
}

/** Runs `rotate-ca`. */
export async function rotateCa(ctx: CliContext, request: RotateCaRequest): Promise<ExitCodeValue> {
  const { env, ca } = request;
  const flag = `--${ca}`;
  checkDayTwoGuard("rotate-ca", env, ctx.env);
  const stack = readStackCluster(ctx.repoRoot, env);
  const file = readStackFile(resolveLayer(ctx.repoRoot, "foundation"), env).path;
  const order = [
    ...stack.nodes.filter((n) => n.role === "controlplane"),
    ...stack.nodes.filter((n) => n.role === "worker"),
  ].map((n) => n.name);
  const before = readRotationRecord(file, ca);
  const steps = rotationSteps(before, order);
  const out = (line: string) => ctx.stdout.write(`${line}\n`);
  const fresh = steps[0].phase === "generated";
  out(
    `rotate-ca ${env} ${flag}: ${fresh ? `starting generation ${steps[0].generation}` : `resuming generation ${steps[0].generation} (${before!.phase}${before!.nodes ? ` on ${before!.nodes.join(", ")}` : ""})`}; ${steps.length} steps, each an up gated on health`,
  );
  // The credentials from before a fresh rotation: at the end they must be refused. A Kubernetes
  // rotation needs the kubeconfig output and kubectl for its gates, and the API server must answer
  // that kubeconfig now (else its refusal at the end would prove nothing; Talos' own rotation
  // verifies the existing PKI first too): checked before any step.
  const credentials =
    fresh || ca === "kubernetes"
      ? await runDayTwo(
          ctx,
          { command: "rotate-ca", env, installCli: request.installCli, readOnly: true },
          async ({ cluster, deps }) => {
            if (ca === "talos") return cluster.talosconfig;
            const kubeconfig = exportedKubeconfig(request.env, cluster);
            await withKubeconfig(deps, kubeconfig, async (file) => {
              const lister = kubectlNodeLister(ctx, deps, file, "nothing was changed");
              await lister.check();
              try {
                await lister.nodes();
              } catch (error) {
                throw new UserError(
                  {
                    what: `rotate-ca ${env} --kubernetes`,
                    problem:
                      "the API server does not answer the exported kubeconfig before the rotation; nothing was changed",
                    got: errorReason(error),
                    fix: `Check the cluster (npm run platform -- health ${env}; kubectl get nodes with npm run platform -- kubeconfig ${env}), then run rotate-ca again`,
                  },
                  ExitCode.failed,
                );
              }
            });
            return kubeconfig;
          },
        )
      : undefined;
  const oldCredentials = fresh ? credentials : undefined;
  for (const [i, step] of steps.entries()) {
    out(`rotate-ca ${env} ${flag}: step ${i + 1}/${steps.length}: ${describeStep(step, order)}`);
    writeRotationRecord(file, ca, step);
    const resume = `Fix the cause, then run \`npm run platform -- rotate-ca ${env} ${flag}\` again: it goes on from ${path.basename(file)}'s caRotation.${ca} (commit that file meanwhile)`;
    try {
      const code = await request.up(`rotate-ca ${env} ${flag}`);
      if (code !== ExitCode.ok) {
        ctx.stderr.write(`rotate-ca ${env} ${flag}: the up of step ${i + 1} failed. ${resume}\n`);
        return code;
      }
    } catch (error) {
      ctx.stderr.write(`rotate-ca ${env} ${flag}: stopped at step ${i + 1}. ${resume}\n`);
      throw error;
    }
    await gate(ctx, request, resume, ca === "kubernetes" ? credentials : undefined);
  }
  if (oldCredentials !== undefined) {
    await (ca === "talos"
      ? oldRefused(ctx, request, oldCredentials)
      : oldKubeconfigRefused(ctx, request, oldCredentials));
  }
  out(
    `rotate-ca ${env} ${flag}: done; commit ${path.relative(ctx.repoRoot, file) || file} (caRotation.${ca}) and fetch the new ${ca === "talos" ? "talosconfig" : "kubeconfig"} from the outputs`,
  );
  return ExitCode.ok;
}

/**
 * After each step: every node answers through the exported talosconfig, and the cluster is healthy;
 * for a Kubernetes rotation also the API server lists every node Ready through the exported
 * kubeconfig (Talos' own rotation checks the same after its steps: verifyConnectivity).
 */
async function gate(
  ctx: CliContext,
  request: RotateCaRequest,
  resume: string,
  /** The kubeconfig output when this run began (--kubernetes): the progress says whether it changed. */
  startKubeconfig: string | undefined,
): Promise<void> {
  await runDayTwo(
    ctx,
    { command: "rotate-ca", env: request.env, installCli: request.installCli, readOnly: true },
    async ({ client, cluster, deps, out }) => {
      for (const node of cluster.nodes) {
        try {
          await client.nodeVersion(node.address);
        } catch (error) {
          throw new UserError(
            {
              what: `rotate-ca ${request.env}`,
              problem: `${node.name} does not answer through the talosconfig the step exported`,
              got: errorReason(error),
              fix: resume,
            },
            ExitCode.failed,
          );
        }
      }
      const health = await healthGate(client, cluster, request.healthTimeoutMs);
      if (!health.ok) {
        throw new UserError(
          {
            what: `rotate-ca ${request.env}`,
            problem: "the cluster is not healthy after the step",
            got: health.reason,
            fix: resume,
          },
          ExitCode.failed,
        );
      }
      out(`  every node answers through the exported talosconfig; ${health.detail}`);
      if (request.ca === "kubernetes") {
        await kubernetesGate(ctx, deps, request, cluster, resume);
        out(
          `  the API server lists all ${cluster.nodes.length} nodes Ready through the exported kubeconfig (${cluster.kubeconfig === startKubeconfig ? "the one from before this run" : "fetched anew since this run began"})`,
        );
      }
    },
  );
}

/** The kubeconfig output of the cluster; a Kubernetes rotation cannot be checked without one. */
function exportedKubeconfig(env: string, cluster: DeployedCluster): string {
  if (!cluster.kubeconfig) {
    throw new UserError(
      {
        what: `rotate-ca ${env} --kubernetes`,
        problem:
          "the outputs hold no kubeconfig to check the Kubernetes API with (the cluster was never bootstrapped?); nothing was changed",
        got: JSON.stringify("kubeconfig"),
        fix: "Bootstrap the cluster (npm run platform -- up <env>), then run rotate-ca again",
      },
      ExitCode.failed,
    );
  }
  return cluster.kubeconfig;
}

/** How often the Kubernetes gate asks the API server again while nodes are missing or not Ready. */
const KUBERNETES_GATE_POLL_MS = 5_000;

/**
 * The API server answers the kubeconfig the step exported, listing every node of the stack Ready
 * (a kubelet restarted on its new CA registers again), within the health timeout.
 */
async function kubernetesGate(
  ctx: CliContext,
  deps: DayTwoDeps,
  request: RotateCaRequest,
  cluster: DeployedCluster,
  resume: string,
): Promise<void> {
  const kubeconfig = exportedKubeconfig(request.env, cluster);
  const start = deps.clock.now();
  let last = "";
  await withKubeconfig(deps, kubeconfig, async (file) => {
    const lister = kubectlNodeLister(ctx, deps, file, "the step was applied, its check not run");
    for (;;) {
      let listed: ListedNode[] | undefined;
      try {
        listed = await lister.nodes();
      } catch (error) {
        if (error instanceof UserError && error.exitCode === ExitCode.missingCli) throw error;
        last = `the API server refused or did not answer: ${errorReason(error)}`;
      }
      if (listed) {
        const notReady = cluster.nodes
          .map(kubernetesNodeName)
          .filter((name) => !listed.some((n) => n.name === name && n.ready));
        if (notReady.length === 0) return;
        last = `not listed Ready: ${notReady.join(", ")}`;
      }
      if (deps.clock.now() - start >= request.healthTimeoutMs) {
        throw new UserError(
          {
            what: `rotate-ca ${request.env} --kubernetes`,
            problem: `the kubeconfig the step exported does not reach every node Ready within ${formatDuration(request.healthTimeoutMs)}`,
            got: last,
            fix: resume,
          },
          ExitCode.failed,
        );
      }
      await deps.clock.sleep(KUBERNETES_GATE_POLL_MS);
    }
  });
}

/** The end of a Kubernetes CA rotation: the API server refuses the kubeconfig from before it. */
async function oldKubeconfigRefused(
  ctx: CliContext,
  request: RotateCaRequest,
  old: string,
): Promise<void> {
  await runDayTwo(
    ctx,
    { command: "rotate-ca", env: request.env, installCli: request.installCli, readOnly: true },
    async ({ deps, out }) => {
      // The new kubeconfig was just listed through, so a failure here is the old one's refusal.
      const listed = await withKubeconfig(deps, old, async (file) => {
        try {
          return await kubectlNodeLister(ctx, deps, file, "the rotation is done").nodes();
        } catch (error) {
          if (error instanceof UserError && error.exitCode === ExitCode.missingCli) throw error;
          return undefined;
        }
      });
      if (listed !== undefined) {
        throw new UserError(
          {
            what: `rotate-ca ${request.env} --kubernetes`,
            problem: "the kubeconfig from before the rotation still works",
            got: `it lists ${listed.length} nodes`,
            fix: "Check the control planes' cluster.acceptedCAs (talosctl get machineconfig); run rotate-ca again",
          },
          ExitCode.failed,
        );
      }
      out("  the kubeconfig from before the rotation is refused by the API server");
    },
  );
}

/** The end of a Talos CA rotation: the talosconfig from before it is refused by every node. */
async function oldRefused(ctx: CliContext, request: RotateCaRequest, old: string): Promise<void> {
  await runDayTwo(
    ctx,
    { command: "rotate-ca", env: request.env, installCli: request.installCli, readOnly: true },
    async ({ deps, cluster, out }) => {
      const accepted: string[] = [];
      await withTalos(deps, { ...cluster, talosconfig: old }, async (client) => {
        for (const node of cluster.nodes) {
          try {
            await client.nodeVersion(node.address);
            accepted.push(node.name);
          } catch {
            // Refused, as it must be.
          }
        }
      });
      if (accepted.length > 0) {
        throw new UserError(
          {
            what: `rotate-ca ${request.env} --talos`,
            problem: "the talosconfig from before the rotation still works",
            got: accepted.join(", "),
            fix: "Check those nodes' machine.acceptedCAs (talosctl get machineconfig); run rotate-ca again",
          },
          ExitCode.failed,
        );
      }
      out(
        `  the talosconfig from before the rotation is refused by all ${cluster.nodes.length} nodes`,
      );
    },
  );
}

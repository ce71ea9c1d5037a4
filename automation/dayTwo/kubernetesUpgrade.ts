// `upgrade kubernetes <env> --to X.Y.Z`: preflight, an etcd snapshot, `talosctl upgrade-k8s
// --dry-run`, the real upgrade (it rolls the control-plane components and every kubelet, then syncs
// the bootstrap manifests, and is safe to re-run), the health check, every kubelet on the target,
// then the stack file bump. upgrade-k8s runs with the images the stack's configs run (their pins
// included) and never prunes; a dry run that would overwrite live manifest objects stops it.
import * as path from "node:path";
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, UserError, errorReason } from "../errors";
import { controlPlanes } from "./cluster";
import { formatDuration } from "./clock";
import { healthGate } from "./gates";
import { kubernetesImages } from "./kubernetesImages";
import {
  ALLOW_MANIFEST_OVERWRITE,
  formatManifestPlan,
  listObjects,
  overwrites,
  supportsNoPrune,
} from "./manifestSync";
import { DEFAULT_KUBERNETES_TIMEOUTS, kubernetesTarget } from "./options";
import { type DayTwoSession, runDayTwo } from "./run";
import type { KubernetesUpgrade } from "./talosClient";
import { MANIFEST_STEP, type ManifestChange, parseManifestDryRun } from "./talosctlOutput";
import { finishStackFile } from "./talosUpgrade";

/** `upgrade kubernetes` as asked. */
interface KubernetesUpgradeRequest {
  readonly env: string;
  /** `1.37.1` (a leading v is dropped). */
  readonly to: string;
  readonly write: boolean;
  readonly keepSnapshots: number;
  readonly installCli: boolean;
  /** The health check of preflight and after the upgrade (default {@link DEFAULT_KUBERNETES_TIMEOUTS}). */
  readonly healthTimeoutMs?: number;
  /** `talosctl upgrade-k8s` as a whole (default {@link DEFAULT_KUBERNETES_TIMEOUTS}). */
  readonly upgradeTimeoutMs?: number;
  /** Go on when the dry run would overwrite live objects of the bootstrap manifests. */
  readonly allowManifestOverwrite?: boolean;
}

/** What the steps need beyond the request: how the operator reruns them (`up` runs them too). */
interface StepsRequest extends Omit<KubernetesUpgradeRequest, "write" | "installCli"> {
  /** @default `npm run platform -- upgrade kubernetes <env> --to <to>` */
  readonly rerun?: string;
}

/** Runs `upgrade kubernetes`. */
export async function upgradeKubernetes(
  ctx: CliContext,
  request: KubernetesUpgradeRequest,
): Promise<ExitCodeValue> {
  const to = kubernetesTarget(request.to);
  return runDayTwo(
    ctx,
    {
      command: "upgrade kubernetes",
      env: request.env,
      installCli: request.installCli,
      commandLine: `upgrade kubernetes ${request.env} --to ${to}`,
    },
    async (session) => {
      await upgradeKubernetesSteps(session, { ...request, to });
      const { cluster } = session;
      finishStackFile(session.ctx, cluster, to, request.write, "kubernetesVersion");
      session.out(
        `next: commit ${path.basename(cluster.stack.file)}, then \`npm run platform -- up ${request.env}\`: it records Kubernetes ${to} in the stack's state`,
      );
      return ExitCode.ok;
    },
  );
}

/**
 * Upgrades Kubernetes `to` a version: preflight, an etcd snapshot, `upgrade-k8s --dry-run` (its
 * manifest plan judged), the upgrade, the health gate and every kubelet on the target; throws (exit
 * 1) when a step fails, and refuses (exit 3) what the plan must not do.
 */
export async function upgradeKubernetesSteps(
  session: DayTwoSession,
  request: StepsRequest,
): Promise<void> {
  const { ctx, deps, client, cluster, out } = session;
  const { to } = request;
  const healthMs = request.healthTimeoutMs ?? DEFAULT_KUBERNETES_TIMEOUTS.healthMs;
  const upgradeMs = request.upgradeTimeoutMs ?? DEFAULT_KUBERNETES_TIMEOUTS.upgradeMs;
  const rerun = request.rerun ?? `npm run platform -- upgrade kubernetes ${request.env} --to ${to}`;
  const what = `upgrade kubernetes ${request.env}`;
  const fail = (problem: string, got: string, fix: string): never => {
    throw new UserError({ what, problem, got, fix }, ExitCode.failed);
  };

  // From the outputs alone: refused before anything is asked of the cluster.
  const images = kubernetesImages(cluster, what);
  const { observed } = await session.preflight(
    `preflight foundation/${request.env} for Kubernetes ${to}:`,
    { kubernetes: to, env: request.env },
    healthMs,
  );
  const started = deps.clock.now();
  const snapshot = await session.snapshot(request.keepSnapshots);

  const upgrade = (dryRun: boolean): KubernetesUpgrade => ({
    to,
    dryRun,
    timeoutMs: upgradeMs,
    images: images.flags,
    noPrune: supportsNoPrune(observed.talosctl.version),
  });
  const via = controlPlanes(cluster)[0];
  const flags = upgradeFlags(upgrade(false));
  out(`talosctl upgrade-k8s --to ${to} --dry-run${flags} (on ${via.name}):`);
  let plan: string;
  try {
    plan = await client.upgradeKubernetes(via.address, upgrade(true));
  } catch (error) {
    return fail(
      "the dry run failed; nothing was changed",
      JSON.stringify(errorReason(error)),
      "Fix what it reports (e.g. removed APIs still in use) and rerun",
    );
  }
  const manifests = readManifestPlan(plan);
  for (const line of planLines(plan, manifests)) out(`    ${line}`);
  checkManifests(manifests, request, rerun, out);

  out(`talosctl upgrade-k8s --to ${to}${flags} (on ${via.name}):`);
  try {
    await client.upgradeKubernetes(via.address, upgrade(false));
  } catch (error) {
    return fail(
      "upgrade-k8s failed partway",
      JSON.stringify(errorReason(error)),
      `It is safe to re-run once the cause is fixed: ${rerun} (snapshot from before: ${path.relative(ctx.repoRoot, snapshot.file)})`,
    );
  }
  const health = await healthGate(client, cluster, healthMs);
  if (!health.ok) {
    return fail(
      "the cluster is not healthy after the upgrade",
      JSON.stringify(health.reason),
      `Fix it, then re-run: ${rerun}`,
    );
  }
  const behind: string[] = [];
  for (const node of cluster.nodes) {
    try {
      const version = await client.kubeletVersion(node.address);
      if (version !== to) behind.push(`${node.name} ${version}`);
    } catch (error) {
      behind.push(`${node.name} (${errorReason(error)})`);
    }
  }
  if (behind.length > 0) {
    return fail("kubelets are not on the target version", behind.join(", "), `Re-run: ${rerun}`);
  }
  out(
    `upgrade kubernetes ${request.env}: ${to} on every node, cluster healthy, in ${formatDuration(deps.clock.now() - started)}`,
  );
  for (const pin of images.pinned) {
    // The patch that pins it still names the old image: the next up would put it back.
    out(
      `note: the stack's patches pin ${pin.component} to ${pin.image}; upgrade-k8s set it to v${to} (without a digest): change the pin to the v${to} image in the same commit as kubernetesVersion, or the next up puts ${pin.image} back`,
    );
  }
}

/** The flags beyond `--to` and `--dry-run`, as talosctl is given them, for the operator. */
function upgradeFlags(upgrade: KubernetesUpgrade): string {
  const flags = upgrade.noPrune ? ["--manifests-no-prune"] : [];
  for (const [component, image] of Object.entries(upgrade.images ?? {})) {
    flags.push(`--${component}-image ${image}`);
  }
  return flags.map((flag) => ` ${flag}`).join("");
}

/** The dry run's manifest plan, or why it cannot be read. */
function readManifestPlan(plan: string): ManifestChange[] | string {
  try {
    return (
      parseManifestDryRun(plan) ??
      "the dry run printed no manifest step (no `updating manifests` line)"
    );
  } catch (error) {
    return errorReason(error);
  }
}

/**
 * The dry run as the operator sees it: talosctl's own lines up to its manifest step, then that step
 * summarized (objects to change, with their diffs, a Secret's withheld), since its diffs of whole
 * objects can run to thousands of lines and hold a Secret's data.
 */
function planLines(plan: string, manifests: ManifestChange[] | string): string[] {
  const lines = plan.trimEnd().split("\n");
  const step = lines.findIndex((line) => MANIFEST_STEP.test(line));
  const before = (step < 0 ? lines : lines.slice(0, step)).filter((line) => line.trim() !== "");
  return typeof manifests === "string" ? before : [...before, ...formatManifestPlan(manifests)];
}

/**
 * Refuses (exit 3) a sync that would overwrite or delete live objects, or one whose plan could not
 * be read, unless the operator allowed it.
 */
function checkManifests(
  manifests: ManifestChange[] | string,
  request: StepsRequest,
  rerun: string,
  out: (line: string) => void,
): void {
  const unread = typeof manifests === "string";
  const blocking = unread ? [] : overwrites(manifests);
  if (!unread && blocking.length === 0) return;
  if (request.allowManifestOverwrite) {
    out(
      `${ALLOW_MANIFEST_OVERWRITE}: ${unread ? "going on without a readable manifest plan" : `upgrade-k8s overwrites ${listObjects(blocking)}`}`,
    );
    return;
  }
  throw new UserError(
    {
      what: `upgrade kubernetes ${request.env}`,
      problem: unread
        ? "could not read the dry run's manifest plan, so whether upgrade-k8s would overwrite live objects is unknown; nothing was changed"
        : `upgrade-k8s would overwrite ${blocking.length} live object${blocking.length === 1 ? "" : "s"} of the bootstrap manifests with the machine config's version (server-side apply, ownership forced); nothing was changed`,
      got: unread ? JSON.stringify(manifests) : listObjects(blocking),
      fix: unread
        ? `Read the plan above; to go on anyway: ${rerun} ${ALLOW_MANIFEST_OVERWRITE}`
        : `If Flux (or anyone) has moved them on, make the stack's manifests match what runs (flux.version, the rendered CNI manifest) and run up, or take them out of the config (docs/day-two.md#bootstrap-manifests); then rerun. To overwrite them anyway (Flux restores its versions when it next reconciles): ${rerun} ${ALLOW_MANIFEST_OVERWRITE}`,
    },
    ExitCode.refused,
  );
}

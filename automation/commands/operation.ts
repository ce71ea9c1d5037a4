// preview, up, refresh and destroy of one layer (or every layer) of one environment: check
// everything that can be checked without the engine first, then per layer take the lock, run the
// engine with the progress view, and write the preview summary.
import type { EngineEvent } from "@pulumi/pulumi/automation";
import * as path from "node:path";
import { resolveStackSettings } from "../backend";
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, translateEngineError } from "../errors";
import { type Operation, checkGuards, isCi } from "../guards";
import {
  type Layer,
  type LayerName,
  layerExists,
  layerProjectFile,
  listEnvironments,
  readStackFile,
  requireEnvironment,
  resolveLayer,
  selectLayers,
} from "../layers";
import { execBws, listBitwardenSecrets } from "../bitwarden";
import { type ResolvedCredentials, resolveCredentials } from "../credentials";
import { assertPreflight } from "../dayTwo/preflight";
import { upPreflight } from "../dayTwo/upPreflight";
import { acquireStackLock, locksDir } from "../lock";
import { ProgressRenderer } from "../progress";
import { previewSection, readSummaryFile, skippedSection, writeSummarySection } from "../summary";

// The lock folder lives with the lock (the day-two commands take the same locks); re-exported.
export { locksDir } from "../lock";

/** One preview/up/refresh/destroy as the operator asked for it. */
export interface OperationRequest {
  readonly operation: Operation;
  readonly layer: LayerName | "all";
  readonly env: string;
  readonly installCli: boolean;
  readonly yesDestroyProd: boolean;
  /** preview only: show the engine's property-level diff. */
  readonly diff: boolean;
  /** preview only: merge a Markdown summary into this file. */
  readonly summaryFile?: string;
  /** Succeed with a note (and a skipped summary section) when the layer has no Pulumi.yaml yet. */
  readonly skipMissingLayer: boolean;
  /** The command line, recorded in the lock so a refused run can say who holds it. */
  readonly commandLine: string;
}

/** Runs an engine operation; resolves to the exit code, rejects with a translated error. */
export async function runOperation(
  ctx: CliContext,
  request: OperationRequest,
): Promise<ExitCodeValue> {
  const summaryFile =
    request.summaryFile !== undefined ? path.resolve(ctx.cwd, request.summaryFile) : undefined;
  // Before any engine work: a file that is not a summary would only be refused at the end.
  if (summaryFile) readSummaryFile(summaryFile);
  if (
    request.layer !== "all" &&
    request.skipMissingLayer &&
    !layerExists(ctx.repoRoot, request.layer)
  ) {
    const reason = `${layerProjectFile(request.layer)} does not exist yet.`;
    ctx.stdout.write(`${request.operation} ${request.layer}/${request.env}: skipped; ${reason}\n`);
    if (summaryFile) {
      writeSummarySection(summaryFile, skippedSection(request.layer, request.env, reason));
    }
    return ExitCode.ok;
  }
  const order = request.operation === "destroy" ? "down" : "up";
  const layers: Layer[] = [];
  for (const name of selectLayers(ctx.repoRoot, request.layer, order)) {
    const layer = resolveLayer(ctx.repoRoot, name);
    if (request.layer === "all" && !listEnvironments(layer).includes(request.env)) {
      ctx.stdout.write(
        `${request.operation} ${name}/${request.env}: skipped; no Pulumi.${request.env}.yaml in ${layer.displayDir}\n`,
      );
      continue;
    }
    requireEnvironment(layer, request.env);
    layers.push(layer);
  }
  // Every guard before any layer runs: a refusal halfway through would leave layers out of step.
  for (const layer of layers) {
    checkGuards(
      {
        operation: request.operation,
        layer: layer.name,
        env: request.env,
        yesDestroyProd: request.yesDestroyProd,
      },
      ctx.env,
    );
  }
  const cli = await ctx.workspaces.ensureCli({ install: request.installCli });
  // Every layer's credentials before any engine work: a missing one names itself and where it was
  // looked for, and nothing runs. Bitwarden is asked once for the whole run.
  const bitwarden = await listBitwardenSecrets(ctx.env, ctx.bws ?? execBws);
  const credentials = new Map(
    layers.map((layer) => [
      layer.name,
      resolveCredentials({
        layer,
        stackFile: readStackFile(layer, request.env),
        env: ctx.env,
        bitwarden,
      }),
    ]),
  );
  for (const layer of layers) {
    await runOnLayer(ctx, request, layer, summaryFile, cli.version, credentials.get(layer.name)!);
  }
  return ExitCode.ok;
}

async function runOnLayer(
  ctx: CliContext,
  request: OperationRequest,
  layer: Layer,
  summaryFile: string | undefined,
  cliVersion: string,
  credentials: ResolvedCredentials,
): Promise<void> {
  const { operation, env } = request;
  const target = `${layer.name}/${env}`;
  const mayCreate = operation === "preview" || operation === "up";
  const settings = resolveStackSettings({
    env: ctx.env,
    layer,
    stackFile: readStackFile(layer, env),
    repoRoot: ctx.repoRoot,
    mayCreate,
    ...(ctx.random ? { random: ctx.random } : {}),
  });
  for (const notice of settings.notices) ctx.stderr.write(`note: ${notice}\n`);
  // A CI runner's embedded backend is a fresh folder: the engine compares with an empty state.
  const notes =
    isCi(ctx.env) && settings.backend.isDefault
      ? [
          `${target} uses the embedded backend, which is empty on a CI runner: every resource shows as new. ` +
            `Name the stack's backend (${layer.project}:backend in its stack file) or set PULUMI_BACKEND_URL.`,
        ]
      : [];
  for (const note of notes) ctx.stderr.write(`note: ${note}\n`);
  const found = Object.entries(credentials.sources);
  if (found.length > 0) {
    // Names and sources only: a value is never printed.
    ctx.stdout.write(
      `${target}: credentials ${found.map(([key, source]) => `${key} (${source})`).join(", ")}\n`,
    );
  }
  const lock = acquireStackLock({
    dir: locksDir(ctx.repoRoot),
    layer: layer.name,
    env,
    command: request.commandLine,
    pid: ctx.host.pid,
    host: ctx.host.hostname,
    isAlive: (pid) => ctx.host.isAlive(pid),
  });
  const live = ctx.stdout.isTTY === true && !isCi(ctx.env);
  const renderer = new ProgressRenderer({
    out: ctx.stdout,
    mode: live ? "live" : "plain",
    clock: ctx.clock,
    operation,
    target,
    quiet: operation === "preview" && request.diff,
  });
  const events: EngineEvent[] = [];
  ctx.stdout.write(
    `${operation} ${target}: backend ${settings.backend.url} (${settings.backend.source}), ` +
      `secrets ${settings.secrets.provider} (${settings.secrets.source}), Pulumi CLI ${cliVersion}\n`,
  );
  const stopTicker = live ? ctx.startTicker?.(() => renderer.redraw()) : undefined;
  let failure: Error | undefined;
  try {
    try {
      const stack = await ctx.workspaces.openStack({
        workDir: layer.dir,
        stackName: env,
        envVars: settings.envVars,
        secretsProvider: settings.secrets.provider,
        create: mayCreate,
        secretConfig: credentials.secretConfig,
      });
      const options = {
        onEvent: (event: EngineEvent) => {
          if (summaryFile) events.push(event);
          renderer.onEvent(event);
        },
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      };
      if (operation === "up" && layer.name === "foundation") {
        // Before any change: the version steps the stack file asks for, the config contract against
        // the nodes, and etcd bootstrapped only once (automation/dayTwo/upPreflight.ts).
        const report = await upPreflight(ctx, { stack, stackFile: readStackFile(layer, env), env });
        for (const note of report.notes) ctx.stderr.write(`note: ${note}\n`);
        assertPreflight(target, report);
      }
      if (operation === "preview") {
        const diff = request.diff
          ? { diff: true, onOutput: (text: string) => ctx.stdout.write(text) }
          : {};
        await stack.preview({ ...options, ...diff });
      } else {
        await stack[operation](options);
      }
    } catch (error) {
      failure = translateEngineError(error, {
        target,
        operation,
        failures: renderer.tally.failures,
        errors: renderer.tally.errors,
      });
    } finally {
      stopTicker?.();
    }
    renderer.finish({ ok: failure === undefined });
    if (summaryFile && operation === "preview") {
      // A failed preview still gets its section: the pull request shows why it failed.
      writeSummarySection(
        summaryFile,
        previewSection({
          layer: layer.name,
          env,
          events,
          ok: failure === undefined,
          errors: failure ? [failure.message] : [],
          notes,
        }),
      );
    }
  } finally {
    lock.release();
  }
  if (failure) throw failure;
}

// preview, up, refresh and destroy of one layer (or every layer) of one environment: check
// everything that can be checked without the engine first, then per layer take the lock, run the
// engine with the progress view, and write the preview summary.
import type { EngineEvent, OutputMap } from "@pulumi/pulumi/automation";
import * as fs from "node:fs";
import * as path from "node:path";
import { chooseBackend, chooseSecretsProvider, resolveStackSettings } from "../backend";
import type { CliContext } from "../context";
import {
  ExitCode,
  type ExitCodeValue,
  UserError,
  isStackNotFound,
  translateEngineError,
} from "../errors";
import { isCi } from "../env";
import { type Operation, checkCiState, checkGuards } from "../guards";
import {
  type Layer,
  type LayerName,
  layerExists,
  layerProjectFile,
  listEnvironments,
  misnamedStackFiles,
  readStackFile,
  requireEnvironment,
  resolveLayer,
  selectLayers,
} from "../layers";
import { type CredentialSource, type ResolvedCredentials } from "../credentials";
import { ciAudience, fetchGithubIdToken, githubOidcAvailable } from "../githubOidc";
import { keepLayout } from "../stackFileRepair";
import type { StackOperations } from "../workspace";
import { assertPreflight } from "../dayTwo/preflight/report";
import { upPreflight } from "../dayTwo/preflight/up";
import {
  afterRemovals,
  controlPlaneStep,
  convergeFoundation,
  previewOfRemovals,
  schematicStep,
} from "../dayTwo/convergeUp";
import { formatDisruption, stackDisruption } from "../dayTwo/disruption";
import { rolloutWithinUp, stagedNodes } from "../dayTwo/rollout";
import type { ConvergeRequest } from "../../components/talos/convergence";
import { lockStack } from "../lock";
import { ProgressRenderer } from "../progress";
import {
  checkStack,
  findCli,
  formatReadiness,
  readinessExitCode,
  validateStackConfig,
} from "../readiness";
import { execBws, listBitwardenSecrets, type SecretsByKey } from "../bitwarden";
import { previewSection, readSummaryFile, skippedSection, writeSummarySection } from "../summary";

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
  /** up: a control-plane removal may leave a single control plane (3→1). */
  readonly allowSingleControlPlane?: boolean;
  /** up: leave the changes the run staged for a later `rollout` instead of rolling them. */
  readonly noRollout?: boolean;
  /** up: upgrade-k8s may overwrite live objects of the bootstrap manifests. */
  readonly allowManifestOverwrite?: boolean;
}

/** The control planes `after`'s outputs record that `before`'s did not: the run just added them. */
function addedControlPlanes(before: OutputMap, after: OutputMap): string[] {
  const names = (outputs: OutputMap) =>
    Object.keys(
      (outputs.nodes?.value as { controlplane?: object } | undefined)?.controlplane ?? {},
    );
  const had = new Set(names(before));
  // A new cluster forms etcd from all its control planes at once: none of them "joins".
  if (had.size === 0) return [];
  return names(after).filter((name) => !had.has(name));
}

/** The request without the removals the run before completed (their machines are gone). */
function withoutLeft(request: ConvergeRequest): ConvergeRequest {
  return Object.fromEntries(
    Object.entries(request).filter(([key]) => key !== "leftEtcd"),
  ) as ConvergeRequest;
}

/** The nodes `before`'s outputs record that `after`'s do not: the run deleted them. */
function removedNodes(before: OutputMap, after: OutputMap): string[] {
  const names = (outputs: OutputMap) => {
    const nodes = outputs.nodes?.value as Record<string, object | undefined> | undefined;
    return [...Object.keys(nodes?.controlplane ?? {}), ...Object.keys(nodes?.worker ?? {})];
  };
  const now = new Set(names(after));
  return names(before).filter((name) => !now.has(name));
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
    if (
      request.layer === "all" &&
      !listEnvironments(layer).includes(request.env) &&
      !misnamedStackFiles(layer).includes(`Pulumi.${request.env}.yml`)
    ) {
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
    const stackFile = readStackFile(layer, request.env);
    checkCiState(
      {
        operation: request.operation,
        layer: layer.name,
        env: request.env,
        project: layer.project,
        backend: chooseBackend({ env: ctx.env, layer, stackFile, repoRoot: ctx.repoRoot }),
        secretsProvider: chooseSecretsProvider(stackFile).provider,
        stackFile,
      },
      ctx.env,
    );
  }
  // The Pulumi CLI, Bitwarden and every layer's credentials and config before any engine work: what
  // is missing is reported all at once, naming where each credential was looked for, and nothing runs.
  const ready = await prepareRun(ctx, request, layers);
  if (!ready.ok) return ready.exitCode;
  for (const layer of layers) {
    noteShadowedCredentials(ctx, layer, request.env, ready.credentials.get(layer.name)!);
  }
  for (const layer of layers) {
    await runOnLayer(
      ctx,
      request,
      layer,
      summaryFile,
      ready.cliVersion,
      ready.credentials.get(layer.name)!,
    );
  }
  return ExitCode.ok;
}

/** A summary section with the run's credential values replaced: the file becomes a PR comment. */
function redactSection<T>(ctx: CliContext, section: T): T {
  return ctx.redactor ? ctx.redactor.redactJson(section) : section;
}

/** A run that may start: the CLI's version and each layer's credentials. */
interface ReadyRun {
  readonly ok: true;
  readonly cliVersion: string;
  readonly credentials: ReadonlyMap<LayerName, ResolvedCredentials>;
}

/**
 * The Pulumi CLI, Bitwarden and every layer's credentials and config, checked before any engine
 * work: when anything is missing, the readiness report (what `validate` prints) goes to stderr and
 * nothing runs.
 */
async function prepareRun(
  ctx: CliContext,
  request: OperationRequest,
  layers: readonly Layer[],
): Promise<ReadyRun | { readonly ok: false; readonly exitCode: ExitCodeValue }> {
  const runsProgram = request.operation === "preview" || request.operation === "up";
  const cli = await findCli(ctx.workspaces, request.installCli);
  // Bitwarden is asked once for the whole run; a failure is one more line of the report.
  let bitwarden: SecretsByKey | undefined;
  let bitwardenProblem: string | undefined;
  try {
    bitwarden = await listBitwardenSecrets(ctx.env, ctx.bws ?? execBws);
    // Every value of the listing: a layer may not use a secret its program still meets elsewhere.
    ctx.redactor?.addAll(bitwarden?.values() ?? []);
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    bitwardenProblem = error.message;
    bitwarden = new Map();
  }
  const checks = layers.map((layer) =>
    checkStack({
      repoRoot: ctx.repoRoot,
      layer,
      env: request.env,
      processEnv: ctx.env,
      bitwarden,
      // In CI the app layer logs into OpenBao with the job's OIDC token, fetched right before the run.
      runKeys:
        layer.name === "app" &&
        githubOidcAvailable(ctx.env) &&
        ciAudience(layer, request.env) !== undefined
          ? ["openbaoJwt"]
          : [],
      // Only preview and up run the program; refresh and destroy work from the state.
      validate: runsProgram
        ? (ctx.validateStack ?? validateStackConfig)
        : () => ({ problems: [], warnings: [] }),
    }),
  );
  const code = bitwardenProblem ? ExitCode.usage : readinessExitCode(checks, cli);
  if (code !== ExitCode.ok || !cli.ok) {
    // (cli.ok is implied by ExitCode.ok; the check narrows its type)
    const report = formatReadiness(`${request.operation} ${request.env}`, checks, cli);
    ctx.stderr.write(bitwardenProblem ? `${bitwardenProblem}\n${report}` : report);
    return { ok: false, exitCode: code };
  }
  return {
    ok: true,
    cliVersion: cli.version,
    credentials: new Map(checks.map((check) => [check.layer, check.credentials])),
  };
}

/**
 * Notes the credentials the stack file also holds (`pulumi config set --secret`) though this run
 * takes them from Bitwarden or the environment, which come first. The stack's value is kept: it may
 * have been stored there on purpose (for runs without Bitwarden or the variable), and an encrypted
 * value is no leak. Saying so tells the operator which value the run uses.
 */
function noteShadowedCredentials(
  ctx: CliContext,
  layer: Layer,
  env: string,
  credentials: ResolvedCredentials,
): void {
  if (credentials.leftInStackFile.length === 0) return;
  const file = readStackFile(layer, env).path;
  const names = credentials.leftInStackFile.map((key) => key.slice(key.indexOf(":") + 1));
  ctx.stderr.write(
    `note: ${path.relative(ctx.repoRoot, file)} also holds ${names.join(", ")} (encrypted); this run takes ` +
      `${names.length > 1 ? "them" : "it"} from ${[...new Set(names.map((n) => credentials.sources[n]))].join(" and ")}, ` +
      `which comes first, and leaves the stack's value as it is (remove it with \`pulumi config rm <key> --stack ${env}\` ` +
      `in ${layer.displayDir} if it is not needed).\n`,
  );
}

/**
 * The engine writes `encryptedkey` into the stack file when it creates the stack or, for a stack file
 * without one, a new data key (pkg/secrets/cloud/manager.go; saved by getAndSaveSecretsManager in
 * pkg/cmd/pulumi/config/io.go). Without committing it, every other checkout mints its own key.
 */
function noteNewDataKey(
  ctx: CliContext,
  layer: Layer,
  env: string,
  keyBefore: string | undefined,
  textBefore: string,
): void {
  const file = readStackFile(layer, env).path;
  // The engine re-serialises the whole file to add its keys; keep the operator's comments.
  const layout = keepLayout(file, textBefore);
  const after = readStackFile(layer, env);
  if (after.encryptedKey === undefined || after.encryptedKey === keyBefore) return;
  ctx.stderr.write(
    `note: the engine wrote the data key of ${after.secretsProvider ?? "the secrets provider"} (encryptedkey) into ` +
      `${path.relative(ctx.repoRoot, after.path)}: commit it, so every checkout and CI keep using this key.` +
      `${layout === "rewritten" ? " The engine rewrote the file (its comments are gone): the file changed during the run." : ""}\n`,
  );
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
  // A preview in CI never creates a stack: a pull request must not `stack init` in a shared backend.
  const mayCreate = operation === "up" || (operation === "preview" && !isCi(ctx.env));
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
  const runSecrets: Record<string, string> = { ...credentials.runSecrets };
  const sources: Record<string, CredentialSource> = { ...credentials.sources };
  const audience = layer.name === "app" ? ciAudience(layer, env) : undefined;
  if (audience !== undefined && githubOidcAvailable(ctx.env)) {
    // GitHub's ID tokens are short-lived: one per run, fetched right before the engine logs in.
    runSecrets[`${layer.project}:openbaoJwt`] = await fetchGithubIdToken({
      env: ctx.env,
      audience,
      ...(ctx.fetchJson ? { fetch: ctx.fetchJson } : {}),
      mask: (command) => ctx.stdout.write(command),
    });
    sources.openbaoJwt = "github-oidc";
  }
  // What the engine gets in its environment, Pulumi does not mask (automation/redaction.ts).
  ctx.redactor?.addAll([...Object.values(runSecrets), ...Object.values(credentials.engineEnv)]);
  const found = Object.entries(sources);
  if (found.length > 0) {
    // Names and sources only: a value is never printed.
    ctx.stdout.write(
      `${target}: credentials ${found.map(([key, source]) => `${key} (${source})`).join(", ")}\n`,
    );
  }
  const lock = await lockStack(
    ctx,
    { layer: layer.name, project: layer.project, env, backendUrl: settings.backend.url },
    request.commandLine,
    { writesState: operation !== "preview" },
  );
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
  const stackFileBefore = readStackFile(layer, env);
  const textBefore = fs.readFileSync(stackFileBefore.path, "utf8");
  let failure: Error | undefined;
  let disruption: string[] | undefined;
  let missingStack = false;
  let skipped: string | undefined;
  try {
    try {
      let stack: StackOperations;
      try {
        stack = await ctx.workspaces.openStack({
          workDir: layer.dir,
          stackName: env,
          envVars: { ...settings.envVars, ...credentials.engineEnv },
          secretsProvider: settings.secrets.provider,
          create: mayCreate,
          runSecrets,
        });
      } catch (error) {
        missingStack = !mayCreate && operation === "preview" && isStackNotFound(error);
        throw error;
      }
      const options = {
        onEvent: (event: EngineEvent) => {
          if (summaryFile) events.push(event);
          renderer.onEvent(event);
        },
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      };
      let converge: ConvergeRequest | undefined;
      let outputsBefore: OutputMap = {};
      if (operation === "up" && layer.name === "foundation") {
        // Before any change: the version steps the stack file asks for and etcd bootstrapped only
        // once (automation/dayTwo/preflight/up.ts); then each disruptive step, sequenced and gated
        // (automation/dayTwo/convergeUp.ts), and the engine told what they reached.
        const outputs = await stack.outputs();
        outputsBefore = outputs;
        const report = await upPreflight({ stack, outputs, stackFile: readStackFile(layer, env) });
        for (const note of report.notes) ctx.stderr.write(`note: ${note}\n`);
        assertPreflight(target, report);
        converge = await convergeFoundation(ctx, {
          env,
          outputs,
          installCli: request.installCli,
          allowManifestOverwrite: request.allowManifestOverwrite === true,
        });
        // A control plane gone from the stack file leaves etcd before the run that removes it.
        converge =
          (await controlPlaneStep(ctx, {
            env,
            outputs,
            installCli: request.installCli,
            stack,
            allowSingleControlPlane: request.allowSingleControlPlane === true,
            request: converge,
          })) ?? converge;
      }
      if (operation === "preview") {
        const diff = request.diff
          ? { diff: true, onOutput: (text: string) => ctx.stdout.write(text) }
          : {};
        const outputs = layer.name === "foundation" ? await stack.outputs() : {};
        // A control plane the stack file drops: previewed as up runs it, after it left etcd.
        const removals =
          layer.name === "foundation"
            ? await previewOfRemovals(ctx, { env, outputs, stack })
            : undefined;
        if (removals) {
          notes.push(removals.note);
          ctx.stderr.write(`note: ${removals.note}\n`);
        }
        const seen: EngineEvent[] = [];
        await stack.preview({
          ...options,
          ...(removals ? { converge: removals.converge, exclude: removals.exclude } : {}),
          onEvent: (event) => {
            seen.push(event);
            options.onEvent(event);
          },
          ...diff,
        });
        // What up would disrupt, in order (automation/dayTwo/disruption.ts).
        if (layer.name === "foundation") {
          disruption = stackDisruption(ctx.repoRoot, env, outputs, seen);
        }
      } else {
        await stack[operation]({ ...options, ...(converge ? { converge } : {}) });
        if (operation === "up" && layer.name === "foundation") {
          // The nodes this run deleted: their Kubernetes nodes go, then the health the run skipped.
          const outputs = await stack.outputs();
          await afterRemovals(ctx, {
            env,
            outputs,
            installCli: request.installCli,
            removed: removedNodes(outputsBefore, outputs),
          });
        }
        // New control planes join etcd one per engine run: another run until the stack file's
        // have all joined (automation/dayTwo/convergeUp.ts).
        while (converge) {
          const outputs = await stack.outputs();
          const next = await controlPlaneStep(ctx, {
            env,
            outputs,
            installCli: request.installCli,
            stack,
            allowSingleControlPlane: request.allowSingleControlPlane === true,
            request: withoutLeft(converge),
            justAdded: addedControlPlanes(outputsBefore, outputs),
          });
          if (!next) break;
          outputsBefore = outputs;
          converge = next;
          await stack.up({ ...options, converge });
        }
        if (operation === "up" && layer.name === "foundation") {
          // The changes the engine run staged (they need a reboot): rolled, gated, unless deferred.
          const outputs = await stack.outputs();
          if (request.noRollout) {
            const staged = stagedNodes(outputs);
            if (staged.length > 0) {
              ctx.stdout.write(
                `up ${target}: staged changes on ${staged.join(", ")} wait for \`npm run platform -- rollout ${env}\` (--no-rollout)\n`,
              );
            }
          } else {
            await rolloutWithinUp(ctx, { env, outputs, installCli: request.installCli });
          }
          // A new image schematic (extensions, kernel arguments): rolled, then recorded.
          const recorded = await schematicStep(ctx, {
            env,
            outputs,
            installCli: request.installCli,
            request: converge ?? {},
          });
          if (recorded) await stack.up({ ...options, converge: withoutLeft(recorded) });
        }
      }
    } catch (error) {
      if (missingStack) {
        skipped =
          `the stack does not exist on ${settings.backend.url} yet, and a preview in CI does not create it ` +
          "(a pull request must not initialise a shared stack); its first `up` creates it.";
      } else {
        failure = translateEngineError(error, {
          target,
          operation,
          failures: renderer.tally.failures,
          errors: renderer.tally.errors,
          layerDir: layer.dir,
          host: ctx.host,
        });
      }
    } finally {
      stopTicker?.();
    }
    if (skipped !== undefined) {
      ctx.stdout.write(`${operation} ${target}: skipped; ${skipped}\n`);
      if (summaryFile) {
        writeSummarySection(
          summaryFile,
          redactSection(ctx, skippedSection(layer.name, env, skipped)),
        );
      }
      return;
    }
    renderer.finish({ ok: failure === undefined, cancelled: ctx.signal?.aborted === true });
    if (disruption && failure === undefined) ctx.stdout.write(formatDisruption(target, disruption));
    noteNewDataKey(ctx, layer, env, stackFileBefore.encryptedKey, textBefore);
    if (summaryFile && operation === "preview") {
      // A failed preview still gets its section: the pull request shows why it failed.
      writeSummarySection(
        summaryFile,
        redactSection(
          ctx,
          previewSection({
            layer: layer.name,
            env,
            events,
            ok: failure === undefined,
            errors: failure ? [failure.message] : [],
            notes,
            ...(disruption && failure === undefined ? { disruption } : {}),
          }),
        ),
      );
    }
  } finally {
    await lock.release();
  }
  if (failure) throw failure;
}

// Before preview/up/refresh/destroy start the engine: the Pulumi CLI, Bitwarden, and each layer's
// credentials and config, all checked before the first problem is reported. When anything is
// missing the whole readiness report (the one `validate` prints) goes to stderr and nothing runs.
import { execBws, listBitwardenSecrets, type SecretsByKey } from "../bitwarden";
import type { CliProbe } from "../cliProbe";
import type { CliContext } from "../context";
import type { ResolvedCredentials } from "../credentials";
import { ExitCode, type ExitCodeValue, UserError } from "../errors";
import type { Layer, LayerName } from "../layers";
import { checkStack, formatReport, readinessExitCode } from "../readiness";
import { configProblems } from "../stackValidation";
import { githubOidcAvailable } from "../githubOidc";
import { ciAudience } from "./operation";

/** A run that may start: the CLI's version and each layer's credentials. */
export interface ReadyRun {
  readonly ok: true;
  readonly cliVersion: string;
  readonly credentials: ReadonlyMap<LayerName, ResolvedCredentials>;
}

/**
 * The Pulumi CLI the Automation API will use (installing it with `--install-cli`), or what is wrong
 * with it as one line of the readiness report rather than an error of its own.
 */
export async function findCli(ctx: CliContext, installCli: boolean): Promise<CliProbe> {
  try {
    const found = await ctx.workspaces.ensureCli({ install: installCli });
    return { ok: true, command: found.command, version: found.version };
  } catch (error) {
    if (!(error instanceof UserError) || error.exitCode !== ExitCode.missingCli) throw error;
    return {
      ok: false,
      problem: `${error.problem.problem}; got ${error.problem.got}`,
      fix: error.problem.fix,
    };
  }
}

/** Checks everything a run needs; prints the report and returns its exit code when something is missing. */
export async function prepareRun(
  ctx: CliContext,
  request: { readonly operation: string; readonly env: string; readonly installCli: boolean },
  layers: readonly Layer[],
): Promise<ReadyRun | { readonly ok: false; readonly exitCode: ExitCodeValue }> {
  const runsProgram = request.operation === "preview" || request.operation === "up";
  const cli = await findCli(ctx, request.installCli);
  // Bitwarden is asked once for the whole run; a failure is one more line of the report.
  let bitwarden: SecretsByKey | undefined;
  let bitwardenProblem: string | undefined;
  try {
    bitwarden = await listBitwardenSecrets(ctx.env, ctx.bws ?? execBws);
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
      validate: runsProgram ? (ctx.validateStack ?? configProblems) : () => [],
    }),
  );
  const code = bitwardenProblem ? ExitCode.usage : readinessExitCode(checks, cli);
  if (code !== ExitCode.ok || !cli.ok) {
    // (cli.ok is implied by ExitCode.ok; the check narrows its type)
    const report = formatReport(`${request.operation} ${request.env}`, checks, cli);
    ctx.stderr.write(bitwardenProblem ? `${bitwardenProblem}\n${report}` : report);
    return { ok: false, exitCode: code };
  }
  return {
    ok: true,
    cliVersion: cli.version,
    credentials: new Map(checks.map((check) => [check.layer, check.credentials])),
  };
}

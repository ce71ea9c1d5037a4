// `init <env>`: the first run of a stack. Optionally copies an example into Pulumi.<env>.yaml, then
// creates the stack on its backend with its secrets provider (so `pulumi config set --secret` works
// next) and prints what is still missing, in the readiness report `validate` prints.
import * as fs from "node:fs";
import * as path from "node:path";
import { resolveStackSettings } from "../backend";
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, UserError, translateEngineError } from "../errors";
import {
  type LayerName,
  listEnvironments,
  resolveLayer,
  readStackFile,
  stackFileArgument,
} from "../layers";
import { lockStack } from "../lock";
import { findCli, formatReadiness } from "../readiness";
import { offlineCheck } from "./validate";

/** `init` as asked. */
interface InitRequest {
  readonly env: string;
  readonly layer: LayerName;
  /** An example's name (`proxmox-vm` for examples/Pulumi.proxmox-vm.yaml) to start the file from. */
  readonly from?: string;
  readonly installCli: boolean;
}

/** The folder of the example stack files, relative to the repository root. */
const EXAMPLES_DIR = "examples";

/** The examples' names: the `<name>` of each examples/Pulumi.<name>.yaml. */
function listExamples(repoRoot: string): string[] {
  const dir = path.join(repoRoot, EXAMPLES_DIR);
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .map((file) => /^Pulumi\.(.+)\.yaml$/.exec(file)?.[1])
    .filter((name): name is string => name !== undefined)
    .sort();
}

const STACK_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/** Writes Pulumi.<env>.yaml from an example, never over an existing file. */
function copyExample(ctx: CliContext, layerDir: string, request: InitRequest, from: string): void {
  const examples = listExamples(ctx.repoRoot);
  if (request.layer !== "foundation") {
    throw new UserError({
      what: "--from",
      problem: "the examples are stack files of the foundation layer",
      got: `--layer ${request.layer}`,
      fix: `Drop --layer, or write ${request.layer}'s Pulumi.${request.env}.yaml yourself (docs/configuration.md)`,
    });
  }
  if (!examples.includes(from)) {
    throw new UserError({
      what: "--from",
      problem: `no example of that name in ${EXAMPLES_DIR}/`,
      got: JSON.stringify(from),
      fix: `Use one of: ${examples.join(", ")} (${EXAMPLES_DIR}/README.md)`,
    });
  }
  const target = path.join(layerDir, `Pulumi.${request.env}.yaml`);
  const source = path.join(ctx.repoRoot, EXAMPLES_DIR, `Pulumi.${from}.yaml`);
  try {
    fs.copyFileSync(source, target, fs.constants.COPYFILE_EXCL);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    throw new UserError({
      what: "init",
      problem: `${path.relative(ctx.repoRoot, target)} exists already; init never overwrites a stack file`,
      got: JSON.stringify(target),
      fix: `Drop --from to create the stack from it, or choose another environment name`,
    });
  }
  ctx.stdout.write(
    `wrote ${path.relative(ctx.repoRoot, target)} from ${EXAMPLES_DIR}/Pulumi.${from}.yaml: ` +
      "replace its example values with yours (docs/configuration.md)\n",
  );
}

/** Runs `init`: 0 when the stack exists on its backend (whatever else is still missing). */
export async function initStack(ctx: CliContext, request: InitRequest): Promise<ExitCodeValue> {
  const { env } = request;
  const file = stackFileArgument(env);
  if (file) {
    // `init Pulumi.dev.yaml` would create Pulumi.Pulumi.dev.yaml.yaml.
    throw new UserError({
      what: "environment",
      problem: "must be the stack name, not its stack file",
      got: JSON.stringify(env),
      fix: `Pass ${file.env}: npm run platform -- init ${file.env}${request.from !== undefined ? ` --from ${request.from}` : ""}`,
    });
  }
  if (!STACK_NAME.test(env)) {
    throw new UserError({
      what: "environment",
      problem: "must be a stack name: letters, digits, -, _ and .",
      got: JSON.stringify(env),
      fix: "Use e.g. dev, lab or staging-2",
    });
  }
  const layer = resolveLayer(ctx.repoRoot, request.layer);
  const target = `${layer.name}/${env}`;
  if (request.from !== undefined) {
    copyExample(ctx, layer.dir, request, request.from);
  } else if (!listEnvironments(layer).includes(env)) {
    const examples = listExamples(ctx.repoRoot);
    throw new UserError({
      what: "environment",
      problem: `no stack file Pulumi.${env}.yaml in the ${layer.name} layer (${layer.displayDir}) to create the stack from`,
      got: JSON.stringify(env),
      fix:
        layer.name === "foundation" && examples.length > 0
          ? `Start from an example: npm run platform -- init ${env} --from <${examples.join("|")}> (${EXAMPLES_DIR}/README.md)`
          : `Write ${layer.displayDir}Pulumi.${env}.yaml first (docs/configuration.md)`,
    });
  }

  const cli = await findCli(ctx.workspaces, request.installCli);
  const report = () => offlineCheck(ctx, layer, env);
  if (!cli.ok) {
    ctx.stderr.write(formatReadiness(`init ${env}`, [report()], cli));
    ctx.stderr.write(
      `init ${target}: the stack is created on its backend once the Pulumi CLI is there; rerun \`npm run platform -- init ${env}${request.layer === "foundation" ? "" : ` --layer ${request.layer}`}\`\n`,
    );
    return ExitCode.missingCli;
  }

  const settings = resolveStackSettings({
    env: ctx.env,
    layer,
    stackFile: readStackFile(layer, env),
    repoRoot: ctx.repoRoot,
    mayCreate: true,
    ...(ctx.random ? { random: ctx.random } : {}),
  });
  for (const notice of settings.notices) ctx.stderr.write(`note: ${notice}\n`);
  // The engine writes the secrets provider's salt or key into the stack file: not during another run.
  const lock = await lockStack(
    ctx,
    { layer: layer.name, project: layer.project, env, backendUrl: settings.backend.url },
    `init ${env}`,
    // The engine writes the stack file here and creates the stack: nothing else of the state.
    { writesState: false },
  );
  try {
    await ctx.workspaces.openStack({
      workDir: layer.dir,
      stackName: env,
      envVars: settings.envVars,
      secretsProvider: settings.secrets.provider,
      create: true,
    });
  } catch (error) {
    throw translateEngineError(error, { target, operation: "init", failures: [], errors: [] });
  } finally {
    await lock.release();
  }
  ctx.stdout.write(
    `init ${target}: the stack exists on backend ${settings.backend.url} (${settings.backend.source}) ` +
      `with secrets provider ${settings.secrets.provider} (${settings.secrets.source})\n`,
  );
  const check = report();
  ctx.stdout.write(formatReadiness(`init ${env}`, [check], cli));
  // How to keep a credential in the stack itself, encrypted by its secrets provider.
  const shell = Object.entries(settings.envVars)
    .filter(([name]) => name !== "PULUMI_SKIP_UPDATE_CHECK")
    .map(([name, value]) => `${name}=${value}`);
  const missing = check.problems
    .map((problem) => /^(\w+): missing credential/.exec(problem)?.[1])
    .filter((key): key is string => key !== undefined);
  ctx.stdout.write(
    [
      `To keep a credential in the stack instead (encrypted; pulumi prompts for the value, so it is never in argv):`,
      `  cd ${layer.displayDir} && export ${shell.join(" ")}`,
      ...(missing.length > 0 ? missing : ["<key>"]).map(
        (key) => `  pulumi config set --secret --stack ${env} ${key}`,
      ),
      "",
    ].join("\n"),
  );
  return ExitCode.ok;
}

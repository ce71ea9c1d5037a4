// Reading a deployed stack: its outputs and what its state holds, without ever creating the stack or
// generating a passphrase. Shared by the `outputs`/`kubeconfig` commands and the day-two commands,
// so it lives below both.
import type { OutputMap } from "@pulumi/pulumi/automation";
import { resolveStackSettings } from "./backend";
import { execBws, listBitwardenSecrets } from "./bitwarden";
import { engineCredentials } from "./credentials";
import type { CliContext } from "./context";
import { translateEngineError } from "./errors";
import { type LayerName, readStackFile, requireEnvironment, resolveLayer } from "./layers";
import type { StackOperations } from "./workspace";

/** Which stack to read. */
export interface ReadRequest {
  readonly layer: LayerName;
  readonly env: string;
  readonly installCli: boolean;
}

/** Opens an existing stack for reading (never creates it, never generates a passphrase). */
async function openForReading(
  ctx: CliContext,
  request: ReadRequest,
): Promise<{ stack: StackOperations; target: string }> {
  const layer = resolveLayer(ctx.repoRoot, request.layer);
  requireEnvironment(layer, request.env);
  await ctx.workspaces.ensureCli({ install: request.installCli });
  const settings = resolveStackSettings({
    env: ctx.env,
    layer,
    stackFile: readStackFile(layer, request.env),
    repoRoot: ctx.repoRoot,
    mayCreate: false,
  });
  // A GCP key kept in Bitwarden must reach the engine too: gs:// and gcpkms:// read
  // GOOGLE_CREDENTIALS (docs/credentials.md).
  const bitwarden = await listBitwardenSecrets(ctx.env, ctx.bws ?? execBws);
  ctx.redactor?.addAll(bitwarden?.values() ?? []);
  const stack = await ctx.workspaces.openStack({
    workDir: layer.dir,
    stackName: request.env,
    envVars: { ...settings.envVars, ...engineCredentials(ctx.env, bitwarden) },
    secretsProvider: settings.secrets.provider,
    create: false,
  });
  return { stack, target: `${layer.name}/${request.env}` };
}

/** Reads a layer's stack outputs (never creates the stack); engine errors translated. */
export async function readOutputs(ctx: CliContext, request: ReadRequest): Promise<OutputMap> {
  const target = `${request.layer}/${request.env}`;
  try {
    const { stack } = await openForReading(ctx, request);
    return await stack.outputs();
  } catch (error) {
    throw translateEngineError(error, { target, operation: "outputs", failures: [], errors: [] });
  }
}

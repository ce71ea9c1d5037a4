// Each layer's own stack-config validation, called as a pure function on a stack file as written:
// the same checks the program runs before it creates anything, without the engine. Values the
// file holds encrypted (`secure:`) are never read, only their keys are passed on.
import { validateAppConfig } from "../components/config/app";
import { validateBootstrapConfig } from "../components/config/bootstrap";
import { validatePlatformConfig } from "../components/config/validate";
import type { LayerName } from "./layers";

/** The keys each layer's program reads from its config (as its loader in components/config does). */
export const PROGRAM_KEYS: Readonly<Record<LayerName, readonly string[]>> = {
  foundation: ["cluster", "nodes", "proxmox", "oci", "openstack", "gcp", "openbao", "dns", "flux"],
  bootstrap: ["gcp", "stateBucket", "secretsKey"],
  app: ["foundationStack", "openbao", "grafana"],
};

/** A stack file's values of one project, split into plain values and the keys held as secrets. */
export interface ProjectValues {
  /** `key` (without the project namespace) → value as written. */
  readonly values: Readonly<Record<string, unknown>>;
  /** Keys whose value is encrypted in the file (`{secure: …}`). */
  readonly secretKeys: ReadonlySet<string>;
}

/** Whether a stack-file value is Pulumi's encrypted form. */
export function isSecureValue(value: unknown): boolean {
  return (
    value !== null &&
    typeof value === "object" &&
    !Array.isArray(value) &&
    typeof (value as { secure?: unknown }).secure === "string"
  );
}

/** The `project:*` values of a stack file's config. */
export function projectValues(
  config: Readonly<Record<string, unknown>>,
  project: string,
): ProjectValues {
  const values: Record<string, unknown> = {};
  const secretKeys = new Set<string>();
  for (const [fullKey, value] of Object.entries(config)) {
    if (!fullKey.startsWith(`${project}:`)) continue;
    const key = fullKey.slice(project.length + 1);
    if (isSecureValue(value)) secretKeys.add(key);
    else values[key] = value;
  }
  return { values, secretKeys };
}

/**
 * Every problem the layer's validation finds in the values, in its own words (`<key>: <problem>`);
 * none when the stack is valid. `secretKeys` are the secret keys the program will see: the file's
 * own and the credentials the CLI hands it for the run.
 */
export function configProblems(input: {
  readonly layer: LayerName;
  readonly env: string;
  /** The stack file as the operator knows it: `Pulumi.dev.yaml`, `app/Pulumi.prod.yaml`. */
  readonly stackFile: string;
  readonly values: Readonly<Record<string, unknown>>;
  readonly secretKeys: ReadonlySet<string>;
}): string[] {
  const { layer, values, secretKeys } = input;
  const read: Record<string, unknown> = {};
  for (const key of PROGRAM_KEYS[layer]) if (values[key] !== undefined) read[key] = values[key];
  try {
    if (layer === "foundation") validatePlatformConfig({ ...read, secretKeys }, input.stackFile);
    else if (layer === "bootstrap") validateBootstrapConfig(read, input.stackFile);
    else validateAppConfig(read, input.env, secretKeys);
    return [];
  } catch (error) {
    // StackConfigError carries the list; anything else is the validation itself failing.
    const problems = (error as { problems?: unknown }).problems;
    if (Array.isArray(problems)) return problems.map(String);
    const message = error instanceof Error ? error.message : String(error);
    return [
      `${input.stackFile}: the validation failed; got ${JSON.stringify(message.split("\n")[0])}. This is a bug: rerun with PLATFORM_DEBUG=1 and report it`,
    ];
  }
}

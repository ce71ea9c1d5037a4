// Each layer's own stack-config validation, called as a pure function on a stack file as written:
// the same checks the program runs before it creates anything, without the engine. Values the
// file holds encrypted (`secure:`) are never read, only their keys are passed on.
import { validateAppConfig } from "../components/config/app";
import { validateBootstrapConfig } from "../components/config/bootstrap";
import { validatePlatformConfig } from "../components/config/validate";
import type { LayerName } from "./layers";

/** Whether a stack-file value is Pulumi's encrypted form. */
export function isSecureValue(value: unknown): boolean {
  return (
    value !== null &&
    typeof value === "object" &&
    !Array.isArray(value) &&
    typeof (value as { secure?: unknown }).secure === "string"
  );
}

/**
 * Every problem the layer's validation finds, in its own words (`<key>: <problem>`); none when the
 * stack is valid. The values are those of `stackFileValues` (components/config), with the keys the
 * CLI hands the program for the run added as present and secret, as the program sees them.
 */
export function configProblems(input: {
  readonly layer: LayerName;
  readonly env: string;
  readonly project: string;
  /** The stack file as the operator knows it: `Pulumi.dev.yaml`, `app/Pulumi.prod.yaml`. */
  readonly stackFile: string;
  readonly values: Readonly<Record<string, unknown>>;
  readonly presentKeys: ReadonlySet<string>;
  readonly secretKeys: ReadonlySet<string>;
}): string[] {
  const { layer, env, project, stackFile, presentKeys, secretKeys } = input;
  const values = { ...input.values };
  try {
    // Called as each layer's loader calls it (components/config: load.ts, bootstrap.ts, app.ts).
    if (layer === "foundation") {
      validatePlatformConfig({ ...values, presentKeys, secretKeys, project }, stackFile);
    } else if (layer === "bootstrap") {
      validateBootstrapConfig(values, stackFile, secretKeys, project);
    } else {
      validateAppConfig(values, env, secretKeys, project);
    }
    return [];
  } catch (error) {
    // StackConfigError carries the list; anything else is the validation itself failing.
    const problems = (error as { problems?: unknown }).problems;
    if (Array.isArray(problems)) return problems.map(String);
    const message = error instanceof Error ? error.message : String(error);
    return [
      `${stackFile}: the validation failed; got ${JSON.stringify(message.split("\n")[0])}. This is a bug: rerun with PLATFORM_DEBUG=1 and report it`,
    ];
  }
}

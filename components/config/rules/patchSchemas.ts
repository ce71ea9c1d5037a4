// Which machine-config schemas a stack's patches are checked against. The Talos provider generates
// the configs, patches applied, for the config contract (configContract, else talosVersion), and its
// generator knows no contract newer than its own machinery (GENERATOR_MACHINERY): a patch must fit
// that release's schema, whatever the nodes run. The nodes may run a newer Talos (talosVersion, right
// after `upgrade talos`): what that release deprecated is the work a later contract bump needs, so it
// is worth a warning, never an error.
import { compareMinor, GENERATOR_MACHINERY, minorOf, parseVersion } from "../../talos/versions";
import { talosConfigSchema, type TalosConfigSchema } from "../talosSchema";

/** The schemas of one stack's patches. */
export interface PatchSchemas {
  /** The release the configs are generated for: every patch must fit it. */
  readonly contract?: TalosConfigSchema;
  /** The release the nodes run, when newer than the contract's: its deprecations are warnings. */
  readonly running?: TalosConfigSchema;
}

function minorOfText(value: string | undefined): string | undefined {
  const version = value === undefined ? undefined : parseVersion(value);
  return version && minorOf(version);
}

/** The oldest of some `MAJOR.MINOR` strings. */
function oldest(first: string, ...rest: string[]): string {
  return rest.reduce((a, b) => (compareMinor(a, b) <= 0 ? a : b), first);
}

/**
 * The schemas for a stack's `talosVersion` and `configContract` as written; none when the Talos
 * release is unknown or malformed (the versions rule reports that). A contract newer than Talos or
 * than the generator is refused by the versions rule; the patches are then checked against what
 * would be generated instead, so they are reported once, for the right release.
 */
export function patchSchemas(talosVersion?: string, configContract?: string): PatchSchemas {
  const running = minorOfText(talosVersion);
  if (running === undefined) return {};
  const contract = oldest(minorOfText(configContract) ?? running, running, GENERATOR_MACHINERY);
  const contractSchema = talosConfigSchema(contract);
  const runningSchema = running === contract ? undefined : talosConfigSchema(running);
  return {
    ...(contractSchema ? { contract: contractSchema } : {}),
    ...(runningSchema ? { running: runningSchema } : {}),
  };
}

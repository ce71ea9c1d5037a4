// The credentials each layer's program needs, and where the CLI finds them: Bitwarden Secrets Manager
// first, then environment variables, then a value already set on the stack (`pulumi config set
// --secret`). Found values reach the program in a file for one operation, which the program deletes
// as it reads it (components/config/runSecretsEnv.ts): never on a command line, in the stack file or
// in any process's environment.
import * as path from "node:path";
import type { Env } from "./env";
import { ExitCode, UserError } from "./errors";
import type { Layer, LayerName, StackFile } from "./layers";

/** A secret a layer's program reads from its config. */
export interface Credential {
  /** The config key under the layer's project namespace (`talos-platform:fluxDeployKey`). */
  readonly configKey: string;
  /** The secret's key in Bitwarden Secrets Manager. */
  readonly bitwardenKey: string;
  /** The environment variable that may hold it. */
  readonly envVar: string;
  /** What it is for, for messages and the README. */
  readonly what: string;
  /** Whether this stack cannot run without it (otherwise the provider's own defaults apply). */
  readonly requiredBy: (config: Readonly<Record<string, unknown>>, project: string) => boolean;
}

const nodes = (config: Readonly<Record<string, unknown>>, project: string) =>
  Array.isArray(config[`${project}:nodes`])
    ? (config[`${project}:nodes`] as { platform?: unknown }[])
    : [];
const usesPlatform =
  (platform: string) => (config: Readonly<Record<string, unknown>>, project: string) =>
    nodes(config, project).some((n) => n?.platform === platform);
const never = () => false;

/** The bootstrap and foundation layers both talk to GCP. */
const GCP_CREDENTIALS: Credential = {
  configKey: "gcpCredentials",
  bitwardenKey: "gcp-credentials",
  envVar: "GOOGLE_CREDENTIALS",
  what: "GCP service-account key (JSON); else application default credentials",
  requiredBy: never,
};

/** Every credential, by layer. */
export const CREDENTIALS: Readonly<Record<LayerName, readonly Credential[]>> = {
  bootstrap: [GCP_CREDENTIALS],
  foundation: [
    {
      configKey: "proxmoxApiToken",
      bitwardenKey: "proxmox-api-token",
      envVar: "PROXMOX_VE_API_TOKEN",
      what: "Proxmox API token (user@realm!id=uuid)",
      requiredBy: usesPlatform("proxmox"),
    },
    {
      configKey: "fluxDeployKey",
      bitwardenKey: "flux-deploy-key",
      envVar: "FLUX_DEPLOY_KEY",
      what: "SSH private key Flux reads the Git repository with",
      requiredBy: (config, project) => {
        const flux = config[`${project}:flux`] as { repository?: unknown } | undefined;
        return typeof flux?.repository === "string" && flux.repository.startsWith("ssh://");
      },
    },
    GCP_CREDENTIALS,
    {
      configKey: "ociPrivateKey",
      bitwardenKey: "oci-private-key",
      envVar: "OCI_PRIVATE_KEY",
      what: "OCI API signing key (PEM); else ~/.oci/config",
      requiredBy: never,
    },
    {
      configKey: "openstackApplicationCredentialSecret",
      bitwardenKey: "openstack-application-credential-secret",
      envVar: "OS_APPLICATION_CREDENTIAL_SECRET",
      what: "OpenStack application credential secret; else clouds.yaml / OS_* variables",
      requiredBy: never,
    },
    {
      configKey: "proxmoxSshPrivateKey",
      bitwardenKey: "proxmox-ssh-private-key",
      envVar: "PROXMOX_VE_SSH_PRIVATE_KEY",
      what: "SSH private key (PEM) for the Proxmox hosts; only with proxmox.ssh and no agent",
      requiredBy: (config, project) => {
        const proxmox = config[`${project}:proxmox`] as { ssh?: { agent?: unknown } } | undefined;
        return proxmox?.ssh !== undefined && proxmox.ssh.agent !== true;
      },
    },
    {
      configKey: "gcpUnsealCredentials",
      bitwardenKey: "gcp-unseal-credentials",
      envVar: "GCP_UNSEAL_CREDENTIALS",
      what: "service-account key (JSON) OpenBao unseals with; only with openbao.credentials: existingKey",
      requiredBy: (config, project) =>
        (config[`${project}:openbao`] as { credentials?: unknown } | undefined)?.credentials ===
        "existingKey",
    },
  ],
  app: [
    {
      configKey: "openbaoToken",
      bitwardenKey: "openbao-token",
      envVar: "OPENBAO_TOKEN",
      what: "OpenBao token of the operator (CI logs in with openbaoJwt instead)",
      requiredBy: never,
    },
    {
      configKey: "openbaoJwt",
      bitwardenKey: "openbao-jwt",
      envVar: "OPENBAO_JWT",
      what: "CI's OIDC token for OpenBao's JWT auth (in GitHub Actions the CLI fetches a fresh one)",
      requiredBy: never,
    },
    {
      configKey: "grafanaAuth",
      bitwardenKey: "grafana-auth",
      envVar: "GRAFANA_AUTH",
      what: "Grafana service-account token",
      requiredBy: (config, project) => config[`${project}:grafana`] !== undefined,
    },
  ],
};

/** Where a resolved credential came from. */
export type CredentialSource = "bitwarden" | "environment" | "stack" | "github-oidc";

/** The credentials found for one layer: values for the run, and the source of each. */
export interface ResolvedCredentials {
  /** Full config keys (`project:key`) → values the program takes for this run. */
  readonly runSecrets: Readonly<Record<string, string>>;
  readonly sources: Readonly<Record<string, CredentialSource>>;
  /**
   * Variables the engine itself needs from what was found: a GCP key from Bitwarden as
   * GOOGLE_CREDENTIALS, which Pulumi's gs:// backend and gcpkms:// secrets provider read
   * (pkg/authhelpers/gcpauth.go) before application default credentials.
   */
  readonly engineEnv: Readonly<Record<string, string>>;
  /**
   * Full config keys the stack file also holds though this run found them in Bitwarden or the
   * environment, which come first: kept there (it may be stored on purpose), and named in a note.
   */
  readonly leftInStackFile: readonly string[];
}

/** The Bitwarden secret of the GCP key the engine also needs (gs:// backend, gcpkms:// secrets). */
const ENGINE_GCP_CREDENTIAL = "gcp-credentials";

/**
 * Variables for the engine from a run's Bitwarden listing: GOOGLE_CREDENTIALS from the GCP key when
 * the environment does not set it already (it is then inherited as is).
 */
export function engineCredentials(
  env: Env,
  bitwarden: ReadonlyMap<string, string> | undefined,
): Record<string, string> {
  const key = bitwarden?.get(ENGINE_GCP_CREDENTIAL);
  return key && !env.GOOGLE_CREDENTIALS ? { GOOGLE_CREDENTIALS: key } : {};
}

/**
 * Credential variables no process the CLI starts needs in its environment: the CLI reads them and
 * hands their values to the program in the credentials file, and the Pulumi CLI passes its whole
 * environment to every provider plugin. Kept: GOOGLE_CREDENTIALS, which the engine itself needs for
 * a gs:// backend and gcpkms:// (docs/credentials.md). `bws` gets BWS_ACCESS_TOKEN explicitly.
 */
export const SHELL_CREDENTIALS: readonly string[] = [
  "BWS_ACCESS_TOKEN",
  ...new Set(
    Object.values(CREDENTIALS)
      .flat()
      .map((credential) => credential.envVar)
      .filter((name) => name !== "GOOGLE_CREDENTIALS"),
  ),
];

/** `env` without the shell's credential variables: for a process the CLI starts with its own env. */
export function withoutShellCredentials(env: Env): Env {
  return Object.fromEntries(
    Object.entries(env).filter(([name]) => !SHELL_CREDENTIALS.includes(name)),
  );
}

/**
 * Takes the shell's credential variables out of `processEnv` (what every child process inherits)
 * and returns the environment as it was, for the CLI to read them from.
 */
export function withholdShellCredentials(processEnv: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env = { ...processEnv };
  for (const name of SHELL_CREDENTIALS) delete processEnv[name];
  return env;
}

/** What was found for one layer: the run's secret config, each source, and what is missing. */
interface FoundCredentials extends ResolvedCredentials {
  /** Required credentials found nowhere. */
  readonly missing: readonly Credential[];
}

/**
 * Looks for every credential the layer declares, in order: Bitwarden, the environment, the stack
 * file (the CI job's OIDC token for OpenBao is added right before the run, see githubOidc.ts).
 * Never throws: {@link resolveCredentials} turns what is missing into an error, and the readiness
 * report lists it with the other problems. Nothing is printed of a value.
 */
export function findCredentials(input: {
  readonly layer: Layer;
  readonly stackFile: StackFile;
  readonly env: Env;
  readonly bitwarden: ReadonlyMap<string, string> | undefined;
}): FoundCredentials {
  const { layer, stackFile, env, bitwarden } = input;
  const runSecrets: Record<string, string> = {};
  const sources: Record<string, CredentialSource> = {};
  const leftInStackFile: string[] = [];
  const missing: Credential[] = [];
  for (const credential of CREDENTIALS[layer.name]) {
    const key = `${layer.project}:${credential.configKey}`;
    const fromBitwarden = bitwarden?.get(credential.bitwardenKey);
    const fromEnv = env[credential.envVar];
    if (fromBitwarden) {
      runSecrets[key] = fromBitwarden;
      sources[credential.configKey] = "bitwarden";
    } else if (fromEnv) {
      runSecrets[key] = fromEnv;
      sources[credential.configKey] = "environment";
    } else if (stackFile.config[key] !== undefined) {
      sources[credential.configKey] = "stack";
    } else if (credential.requiredBy(stackFile.config, layer.project)) {
      missing.push(credential);
    }
    if (runSecrets[key] !== undefined && stackFile.config[key] !== undefined) {
      leftInStackFile.push(key);
    }
  }
  return {
    runSecrets,
    sources,
    engineEnv: engineCredentials(env, bitwarden),
    leftInStackFile,
    missing,
  };
}

/** Every place a credential is looked for, for messages. */
export function credentialPlaces(credential: Credential, bitwardenListed: boolean): string {
  return (
    `Bitwarden secret "${credential.bitwardenKey}"${bitwardenListed ? "" : " (BWS_ACCESS_TOKEN not set)"}, ` +
    `environment variable ${credential.envVar}, or \`pulumi config set --secret ${credential.configKey}\``
  );
}

/**
 * Finds every credential the layer declares, in order: Bitwarden, the environment, the stack file.
 * A required one found nowhere is an error naming it and every place looked; nothing is printed of a
 * value. `bitwarden` is the listing of one `bws secret list`, shared by the layers of a run.
 */
export function resolveCredentials(input: {
  readonly layer: Layer;
  readonly stackFile: StackFile;
  readonly env: Env;
  readonly bitwarden: ReadonlyMap<string, string> | undefined;
}): ResolvedCredentials {
  const { layer, stackFile, bitwarden } = input;
  const { missing, ...found } = findCredentials(input);
  if (missing.length > 0) {
    const looked = (c: Credential) =>
      `${c.configKey} (${c.what}): ${credentialPlaces(c, bitwarden !== undefined)}`;
    throw new UserError(
      {
        what: `${layer.name} (${path.basename(stackFile.path)})`,
        problem: `missing credential${missing.length > 1 ? "s" : ""} ${missing.map((c) => c.configKey).join(", ")}`,
        got: "none of the places below",
        fix: `Provide ${missing.length > 1 ? "each" : "it"} in one of: ${missing.map(looked).join("; ")}`,
      },
      ExitCode.usage,
    );
  }
  return found;
}

// Guard rails: commands that must not run where they could do harm. Checked before the Pulumi CLI is
// looked for and before any file is written, so a refusal has no side effects.
import { type BackendChoice, isKmsSecretsProvider } from "./backend";
import { type Env, isCi } from "./env";
import { ExitCode, UserError } from "./errors";
import type { LayerName, StackFile } from "./layers";

/** The engine operations the CLI runs. */
export type Operation = "preview" | "up" | "refresh" | "destroy";

/** Environments whose destruction needs an explicit flag. */
const PROTECTED_ENVIRONMENTS: readonly string[] = ["prod"];

/** Layers only an operator applies, from a workstation (never from CI), and why. */
const WORKSTATION_ONLY_LAYERS: Readonly<Partial<Record<LayerName, string>>> = {
  foundation:
    "It can reboot nodes and must work while the cluster is down, so the operator applies it " +
    "from a workstation on the cluster's network: run it there, without CI set",
  // Its state is in the operator's embedded backend, which a CI runner does not have: from CI it
  // would start from empty state and try to create the bucket everything else is stored in.
  bootstrap:
    "Its state lives in the operator's local backend (.pulumi-state), which a CI runner does not " +
    "have: run it from the workstation that holds it, without CI set",
};

/** What a guard needs to know about a command. */
interface GuardRequest {
  readonly operation: Operation;
  readonly layer: LayerName;
  readonly env: string;
  readonly yesDestroyProd: boolean;
}

/** Throws a "refused" error when a guard rail forbids the command. */
export function checkGuards(request: GuardRequest, env: Env): void {
  const { operation, layer } = request;
  const workstationOnly = WORKSTATION_ONLY_LAYERS[layer];
  // refresh writes the state as much as up does, and talks to the same cluster and backend.
  if (operation !== "preview" && workstationOnly && isCi(env)) {
    throw new UserError(
      {
        what: `${operation} ${layer}/${request.env}`,
        problem: `the ${layer} layer is not applied from CI`,
        got: `CI=${JSON.stringify(env.CI)}`,
        fix: workstationOnly,
      },
      ExitCode.refused,
    );
  }
  if (
    operation === "destroy" &&
    PROTECTED_ENVIRONMENTS.includes(request.env) &&
    !request.yesDestroyProd
  ) {
    throw new UserError(
      {
        what: `destroy ${layer}/${request.env}`,
        problem: `destroying ${request.env} needs --yes-destroy-prod`,
        got: "no --yes-destroy-prod",
        fix: `Rerun with --yes-destroy-prod if you mean to delete every resource of ${layer}/${request.env}`,
      },
      ExitCode.refused,
    );
  }
}

/** The day-two commands. */
export type DayTwoCommandName =
  | "up"
  | "preflight"
  | "upgrade talos"
  | "upgrade kubernetes"
  | "etcd snapshot"
  | "etcd restore"
  | "etcd defrag"
  | "certs"
  | "health"
  | "replace-node"
  | "drift"
  | "rollout"
  | "rotate-ca";

/** Day-two commands that change a running cluster, and what they do to it. */
export const CLUSTER_CHANGING_COMMANDS: Readonly<Partial<Record<DayTwoCommandName, string>>> = {
  "upgrade talos": "it reboots every node into a new Talos",
  "upgrade kubernetes": "it restarts the control plane and every kubelet",
  "etcd restore": "it wipes etcd and brings the cluster back to a snapshot",
  "etcd defrag": "it defragments each etcd member's database, which blocks that member meanwhile",
  "replace-node": "it removes a member from etcd",
  rollout: "it reboots nodes into their staged machine configs",
  "rotate-ca": "it replaces a CA of the running cluster on every node",
};

/**
 * Refuses a command that changes a running cluster when `CI` is set, like `up` of the foundation:
 * an operator runs it from a workstation on the cluster's network, watching it.
 */
export function checkDayTwoGuard(command: DayTwoCommandName, envName: string, env: Env): void {
  const what = CLUSTER_CHANGING_COMMANDS[command];
  if (what === undefined || !isCi(env)) return;
  throw new UserError(
    {
      what: `${command} ${envName}`,
      problem: `changes the running cluster and is not run from CI (${what})`,
      got: `CI=${JSON.stringify(env.CI)}`,
      fix: "Run it from a workstation on the cluster's network, without CI set",
    },
    ExitCode.refused,
  );
}

/** Operations that write a stack's state. */
const STATE_WRITING: readonly Operation[] = ["up", "refresh", "destroy"];

/** What the CI state guards need to know about one stack. */
interface StateGuardRequest {
  readonly operation: Operation;
  readonly layer: LayerName;
  readonly env: string;
  readonly project: string;
  readonly backend: BackendChoice;
  readonly secretsProvider: string;
  readonly stackFile: StackFile;
}

/**
 * Refuses, in CI, to write a state that would be lost or re-keyed: the embedded backend is an empty
 * folder on a runner (the state would start empty and go with the runner), and a KMS secrets
 * provider without `encryptedkey` in the committed stack file makes the engine mint a new data key
 * on every run (pkg/secrets/cloud/manager.go) and re-encrypt the state with it.
 */
export function checkCiState(request: StateGuardRequest, env: Env): void {
  if (!isCi(env) || !STATE_WRITING.includes(request.operation)) return;
  const what = `${request.operation} ${request.layer}/${request.env}`;
  if (request.backend.isDefault) {
    throw new UserError(
      {
        what,
        problem:
          "the embedded backend is an empty folder on a CI runner: the state would start empty and be lost with the runner",
        got: JSON.stringify(request.backend.url),
        fix: `Name the stack's backend (${request.project}:backend in its stack file, e.g. the bootstrap layer's gs:// bucket) or set PULUMI_BACKEND_URL`,
      },
      ExitCode.refused,
    );
  }
  if (
    isKmsSecretsProvider(request.secretsProvider) &&
    request.stackFile.encryptedKey === undefined
  ) {
    throw new UserError(
      {
        what,
        problem:
          "the stack file names a KMS secrets provider but no encryptedkey: on a runner the engine would mint a new data key on every run and re-key the state",
        got: JSON.stringify(request.secretsProvider),
        fix: `Run \`npm run platform -- preview ${request.env} --layer ${request.layer}\` once from a workstation: the engine writes encryptedkey into the stack file; commit that line`,
      },
      ExitCode.refused,
    );
  }
}

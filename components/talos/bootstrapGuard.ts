// The program's own "no second bootstrap" guard, so that a bare `pulumi up` (or a refactor that
// changes the Bootstrap's URN, which the engine turns into create-new + delete-old) cannot bootstrap a
// bootstrapped cluster: the rule is bootstrapRecord.ts's, shared with the CLI's preflight.
//
// How: a `beforeCreate` resource hook on the Bootstrap. The engine runs it right before it would call
// the provider's create (and before a create-replacement), also in previews (`onDryRun`), never for a
// resource the state keeps (same or update steps): a normal re-run never consults it, and a first
// bootstrap passes because the stack has no record yet. The hook reads the stack's last outputs through
// a StackReference to the stack itself (the engine allows it: the builtin provider asks the backend for
// the named stack's latest checkpoint, which during an update still holds the previous run's outputs,
// and a stack never deployed reads as no outputs).
import * as pulumi from "@pulumi/pulumi";
import {
  type BootstrapHistory,
  BOOTSTRAP_OUTPUT,
  bootstrapHistory,
  caFingerprint,
  type EtcdBootstrapRecord,
  isSecondBootstrap,
  secondBootstrapMessage,
} from "./bootstrapRecord";

/** The outputs of its last `up` the guard reads from the stack. */
const READ = [BOOTSTRAP_OUTPUT, "kubeconfig", "talosconfig"] as const;

/** The running stack's fully qualified name, as a StackReference to it takes it. */
function ownStackName(): string {
  return `${pulumi.getOrganization()}/${pulumi.getProject()}/${pulumi.getStack()}`;
}

/** Inputs of a {@link BootstrapGuard}. */
export interface BootstrapGuardArgs {
  /** The Bootstrap resource's name, for messages. */
  readonly resource: string;
  /** The node it bootstraps, by name. */
  readonly node: string;
  /** The Talos CA certificate the Bootstrap's client configuration carries. */
  readonly caCertificate: pulumi.Output<string>;
}

/**
 * The guard of one cluster's Bootstrap: a StackReference to the stack's own last outputs, the
 * `beforeCreate` hook to bind to the Bootstrap, and the record to export once it exists.
 */
export class BootstrapGuard {
  /** Bind to the Bootstrap's `hooks.beforeCreate`. */
  readonly hook: pulumi.ResourceHook;
  /** The stack's own last outputs. */
  readonly lastOutputs: pulumi.StackReference;
  private readonly history: Promise<BootstrapHistory | { error: string }>;

  constructor(
    name: string,
    private readonly args: BootstrapGuardArgs,
    parent: pulumi.Resource,
  ) {
    this.lastOutputs = new pulumi.StackReference(
      `${name}-last-outputs`,
      { name: ownStackName() },
      { parent },
    );
    // Caught here: the hook runs only when a create is due, and a read that failed makes it refuse.
    this.history = Promise.all(READ.map((key) => this.lastOutputs.getOutputDetails(key))).then(
      (details) =>
        bootstrapHistory(
          Object.fromEntries(
            READ.map((key, i) => [key, details[i].value ?? details[i].secretValue]),
          ),
        ),
      (error: unknown) => ({ error: error instanceof Error ? error.message : String(error) }),
    );
    // The CA the Bootstrap would use. By the time the engine runs the hook it has received the
    // Bootstrap's inputs, which the SDK sends only once this same Output resolved, so the value is
    // here; it stays undefined only while unknown (a preview creating the machine secrets).
    let currentCa: string | undefined;
    args.caCertificate.apply((ca) => {
      currentCa = caFingerprint(ca);
    });
    this.hook = new pulumi.ResourceHook(
      `${name}-bootstrap-once`,
      async (hookArgs) => {
        const history = await this.history;
        if ("error" in history) {
          throw new Error(
            `etcd bootstrap: whether etcd was bootstrapped cannot be read from the stack's last outputs (${ownStackName()}), so up does not bootstrap it; got ${JSON.stringify(history.error)}. Check access to the stack's backend and rerun`,
          );
        }
        if (isSecondBootstrap(history, currentCa)) {
          const address = hookArgs.newInputs?.node;
          throw new Error(
            secondBootstrapMessage({
              resource: args.resource,
              node: typeof address === "string" ? `${args.node} (${address})` : args.node,
              evidence: history.bootstrapped ? history.evidence : "",
            }),
          );
        }
      },
      { onDryRun: true },
    );
  }

  /**
   * The `etcdBootstrap` output: the cluster's CA fingerprint once the Bootstrap exists (unknown in a
   * preview that creates it; nothing when a targeted `up` skipped its create, which leaves its id
   * empty). A fingerprint of a public certificate, so not secret.
   */
  record(bootstrap: pulumi.CustomResource): pulumi.Output<EtcdBootstrapRecord | undefined> {
    return pulumi.unsecret(
      pulumi
        .all([bootstrap.id, this.args.caCertificate])
        .apply(([id, ca]) => (id ? { talosCaSha256: caFingerprint(ca) } : undefined)),
    );
  }
}

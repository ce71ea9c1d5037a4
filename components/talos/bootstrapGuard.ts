// The program's own "no second bootstrap" guard, so that a bare `pulumi up` (or a refactor that
// changes the Bootstrap's URN, which the engine turns into create-new + delete-old) cannot bootstrap a
// bootstrapped cluster: the rule is bootstrapRecord.ts's, shared with the CLI's preflight.
//
// How: a `beforeCreate` resource hook on the Bootstrap. The engine runs it right before it would call
// the provider's create (and before a create-replacement), also in previews (`onDryRun`), never for a
// resource the state keeps (same or update steps): a normal re-run never consults it, and a first
// bootstrap passes because the stack has no record yet. It judges the stack's last outputs
// (lastOutputs.ts; a stack never deployed has none).
import * as pulumi from "@pulumi/pulumi";
import {
  bootstrapHistory,
  caFingerprint,
  type EtcdBootstrapRecord,
  isSecondBootstrap,
  secondBootstrapMessage,
} from "./bootstrapRecord";
import { type LastOutputs, ownStackName } from "./lastOutputs";

/** Inputs of a {@link BootstrapGuard}. */
export interface BootstrapGuardArgs {
  /** The Bootstrap resource's name, for messages. */
  readonly resource: string;
  /** The node it bootstraps, by name. */
  readonly node: string;
  /** The Talos CA certificate the Bootstrap's client configuration carries. */
  readonly caCertificate: pulumi.Output<string>;
  /** The stack's last outputs. */
  readonly lastOutputs: LastOutputs;
}

/** The guard of one cluster's Bootstrap: the `beforeCreate` hook to bind to it, and its record. */
export class BootstrapGuard {
  /** Bind to the Bootstrap's `hooks.beforeCreate`. */
  readonly hook: pulumi.ResourceHook;

  constructor(
    name: string,
    private readonly args: BootstrapGuardArgs,
  ) {
    const last = args.lastOutputs;
    // A read that failed makes the hook refuse, when a create is due.
    const history = "error" in last ? last : bootstrapHistory(last.values);
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

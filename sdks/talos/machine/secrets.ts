import * as pulumi from "@pulumi/pulumi";
import * as outputs from "../types/output";
import * as utilities from "../utilities";

/** Inputs of `talos.machine.Secrets`. */
export interface SecretsArgs {
  /** The Talos version the secrets are generated for (the config contract). */
  talosVersion?: pulumi.Input<string>;
}

/** Stored state of `talos.machine.Secrets`. */
export interface SecretsState {
  clientConfiguration?: pulumi.Input<outputs.machine.ClientConfiguration>;
  machineSecrets?: pulumi.Input<outputs.machine.MachineSecrets>;
  talosVersion?: pulumi.Input<string>;
}

/** Generates the machine secrets (PKI, tokens) of one Talos cluster. */
export class Secrets extends pulumi.CustomResource {
  /** @internal */
  public static readonly __pulumiType = "talos:machine/secrets:Secrets";

  /** Reads an existing Secrets resource's state. */
  public static get(
    name: string,
    id: pulumi.Input<pulumi.ID>,
    state?: SecretsState,
    opts?: pulumi.CustomResourceOptions,
  ): Secrets {
    return new Secrets(name, state, { ...opts, id });
  }

  /** True when `obj` is a Secrets resource, across copies of this package. */
  public static isInstance(obj: unknown): obj is Secrets {
    return (
      pulumi.CustomResource.isInstance(obj) && (obj as any).__pulumiType === Secrets.__pulumiType
    );
  }

  /** Talos API client credentials (admin). */
  declare readonly clientConfiguration: pulumi.Output<outputs.machine.ClientConfiguration>;
  /** The machine secrets. */
  declare readonly machineSecrets: pulumi.Output<outputs.machine.MachineSecrets>;
  /** The Talos version the secrets were generated for. */
  declare readonly talosVersion: pulumi.Output<string>;

  constructor(name: string, args?: SecretsArgs, opts?: pulumi.CustomResourceOptions);
  constructor(
    name: string,
    argsOrState?: SecretsArgs | SecretsState,
    opts?: pulumi.CustomResourceOptions,
  ) {
    const inputs: pulumi.Inputs = {};
    if (opts?.id) {
      const state = argsOrState as SecretsState | undefined;
      inputs["clientConfiguration"] = state?.clientConfiguration;
      inputs["machineSecrets"] = state?.machineSecrets;
      inputs["talosVersion"] = state?.talosVersion;
    } else {
      const args = argsOrState as SecretsArgs | undefined;
      inputs["talosVersion"] = args?.talosVersion;
      inputs["clientConfiguration"] = undefined;
      inputs["machineSecrets"] = undefined;
    }
    super(Secrets.__pulumiType, name, inputs, utilities.withDefaults(opts));
  }
}

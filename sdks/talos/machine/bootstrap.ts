import * as pulumi from "@pulumi/pulumi";
import * as inputs from "../types/input";
import * as outputs from "../types/output";
import * as utilities from "../utilities";

/** Inputs of `talos.machine.Bootstrap`. */
export interface BootstrapArgs {
  /** Talos API client credentials. */
  clientConfiguration?: pulumi.Input<inputs.machine.BootstrapClientConfiguration>;
  /** Write-only credentials (secret). */
  clientConfigurationWo?: pulumi.Input<inputs.machine.BootstrapClientConfiguration>;
  /** The endpoint to reach the node through (defaults to `node`). */
  endpoint?: pulumi.Input<string>;
  /** The control-plane node to bootstrap etcd on. */
  node: pulumi.Input<string>;
  /** Create timeout. */
  timeouts?: pulumi.Input<inputs.machine.BootstrapTimeouts>;
}

/** Stored state of `talos.machine.Bootstrap`. */
export type BootstrapState = Partial<BootstrapArgs>;

/** Bootstraps etcd on one control-plane node. Not idempotent: bootstrap a cluster once. */
export class Bootstrap extends pulumi.CustomResource {
  /** @internal */
  public static readonly __pulumiType = "talos:machine/bootstrap:Bootstrap";

  /** Reads an existing Bootstrap's state. */
  public static get(
    name: string,
    id: pulumi.Input<pulumi.ID>,
    state?: BootstrapState,
    opts?: pulumi.CustomResourceOptions,
  ): Bootstrap {
    return new Bootstrap(name, state as BootstrapArgs, { ...opts, id });
  }

  /** True when `obj` is a Bootstrap, across copies of this package. */
  public static isInstance(obj: unknown): obj is Bootstrap {
    return (
      pulumi.CustomResource.isInstance(obj) && (obj as any).__pulumiType === Bootstrap.__pulumiType
    );
  }

  declare readonly clientConfiguration: pulumi.Output<
    outputs.machine.ClientConfiguration | undefined
  >;
  declare readonly clientConfigurationWo: pulumi.Output<
    outputs.machine.ClientConfiguration | undefined
  >;
  declare readonly endpoint: pulumi.Output<string>;
  declare readonly node: pulumi.Output<string>;
  declare readonly timeouts: pulumi.Output<outputs.machine.BootstrapTimeouts | undefined>;

  constructor(name: string, args: BootstrapArgs, opts?: pulumi.CustomResourceOptions);
  constructor(
    name: string,
    argsOrState: BootstrapArgs | BootstrapState,
    opts?: pulumi.CustomResourceOptions,
  ) {
    const inputs: pulumi.Inputs = {};
    if (opts?.id) {
      Object.assign(inputs, argsOrState ?? {});
    } else {
      const args = argsOrState as BootstrapArgs | undefined;
      if (args?.node === undefined && !opts?.urn) {
        throw new Error("Missing required property 'node'");
      }
      inputs["clientConfiguration"] = args?.clientConfiguration;
      inputs["clientConfigurationWo"] = utilities.secretInput(args?.clientConfigurationWo);
      inputs["endpoint"] = args?.endpoint;
      inputs["node"] = args?.node;
      inputs["timeouts"] = args?.timeouts;
    }
    super(
      Bootstrap.__pulumiType,
      name,
      inputs,
      utilities.withSecretOutputs(utilities.withDefaults(opts), ["clientConfigurationWo"]),
    );
  }
}

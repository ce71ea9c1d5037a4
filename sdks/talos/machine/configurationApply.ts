import * as pulumi from "@pulumi/pulumi";
import * as inputs from "../types/input";
import * as outputs from "../types/output";
import * as utilities from "../utilities";

/** Inputs of `talos.machine.ConfigurationApply`. */
export interface ConfigurationApplyArgs {
  /** `auto` (default), `reboot`, `no_reboot`, `staged` or `staged_if_needing_reboot`. */
  applyMode?: pulumi.Input<string>;
  /** Talos API client credentials; the provider falls back to an insecure apply for a node in maintenance mode. */
  clientConfiguration?: pulumi.Input<inputs.machine.ConfigurationApplyClientConfiguration>;
  /** Write-only credentials (secret). */
  clientConfigurationWo?: pulumi.Input<inputs.machine.ConfigurationApplyClientConfiguration>;
  /** Patches applied on top of `machineConfigurationInput`. */
  configPatches?: pulumi.Input<pulumi.Input<string>[]>;
  /** The endpoint to reach the node through (defaults to `node`). */
  endpoint?: pulumi.Input<string>;
  /** The machine configuration to apply (secret). */
  machineConfigurationInput?: pulumi.Input<string>;
  /** Write-only machine configuration (secret). */
  machineConfigurationInputWo?: pulumi.Input<string>;
  /** The node's address. */
  node: pulumi.Input<string>;
  /** What to do to the node when this resource is destroyed. */
  onDestroy?: pulumi.Input<inputs.machine.ConfigurationApplyOnDestroy>;
  /** Create, update and delete timeouts. */
  timeouts?: pulumi.Input<inputs.machine.Timeout>;
}

/** Stored state of `talos.machine.ConfigurationApply`. */
export interface ConfigurationApplyState extends Partial<ConfigurationApplyArgs> {
  machineConfiguration?: pulumi.Input<string>;
  machineConfigurationHash?: pulumi.Input<string>;
  resolvedApplyMode?: pulumi.Input<string>;
}

/** Applies a machine configuration to a node through the Talos API (port 50000). */
export class ConfigurationApply extends pulumi.CustomResource {
  /** @internal */
  public static readonly __pulumiType = "talos:machine/configurationApply:ConfigurationApply";

  /** Reads an existing ConfigurationApply's state. */
  public static get(
    name: string,
    id: pulumi.Input<pulumi.ID>,
    state?: ConfigurationApplyState,
    opts?: pulumi.CustomResourceOptions,
  ): ConfigurationApply {
    return new ConfigurationApply(name, state as ConfigurationApplyArgs, { ...opts, id });
  }

  /** True when `obj` is a ConfigurationApply, across copies of this package. */
  public static isInstance(obj: unknown): obj is ConfigurationApply {
    return (
      pulumi.CustomResource.isInstance(obj) &&
      (obj as any).__pulumiType === ConfigurationApply.__pulumiType
    );
  }

  declare readonly applyMode: pulumi.Output<string>;
  declare readonly clientConfiguration: pulumi.Output<
    outputs.machine.ClientConfiguration | undefined
  >;
  declare readonly clientConfigurationWo: pulumi.Output<
    outputs.machine.ClientConfiguration | undefined
  >;
  declare readonly configPatches: pulumi.Output<string[] | undefined>;
  declare readonly endpoint: pulumi.Output<string>;
  /** The configuration as applied, patches merged (secret). */
  declare readonly machineConfiguration: pulumi.Output<string>;
  /** A hash of the applied configuration. */
  declare readonly machineConfigurationHash: pulumi.Output<string>;
  declare readonly machineConfigurationInput: pulumi.Output<string | undefined>;
  declare readonly machineConfigurationInputWo: pulumi.Output<string | undefined>;
  declare readonly node: pulumi.Output<string>;
  declare readonly onDestroy: pulumi.Output<
    outputs.machine.ConfigurationApplyOnDestroy | undefined
  >;
  /** The apply mode the provider actually used. */
  declare readonly resolvedApplyMode: pulumi.Output<string>;
  declare readonly timeouts: pulumi.Output<outputs.machine.Timeout | undefined>;

  constructor(name: string, args: ConfigurationApplyArgs, opts?: pulumi.CustomResourceOptions);
  constructor(
    name: string,
    argsOrState: ConfigurationApplyArgs | ConfigurationApplyState,
    opts?: pulumi.CustomResourceOptions,
  ) {
    const inputs: pulumi.Inputs = {};
    if (opts?.id) {
      Object.assign(inputs, argsOrState ?? {});
    } else {
      const args = argsOrState as ConfigurationApplyArgs | undefined;
      if (args?.node === undefined && !opts?.urn) {
        throw new Error("Missing required property 'node'");
      }
      inputs["applyMode"] = args?.applyMode;
      inputs["clientConfiguration"] = args?.clientConfiguration;
      inputs["clientConfigurationWo"] = utilities.secretInput(args?.clientConfigurationWo);
      inputs["configPatches"] = args?.configPatches;
      inputs["endpoint"] = args?.endpoint;
      inputs["machineConfigurationInput"] = utilities.secretInput(args?.machineConfigurationInput);
      inputs["machineConfigurationInputWo"] = utilities.secretInput(
        args?.machineConfigurationInputWo,
      );
      inputs["node"] = args?.node;
      inputs["onDestroy"] = args?.onDestroy;
      inputs["timeouts"] = args?.timeouts;
      inputs["machineConfiguration"] = undefined;
      inputs["machineConfigurationHash"] = undefined;
      inputs["resolvedApplyMode"] = undefined;
    }
    const secretOutputs = [
      "clientConfigurationWo",
      "machineConfiguration",
      "machineConfigurationInput",
      "machineConfigurationInputWo",
    ];
    super(
      ConfigurationApply.__pulumiType,
      name,
      inputs,
      utilities.withSecretOutputs(utilities.withDefaults(opts), secretOutputs),
    );
  }
}

import * as pulumi from "@pulumi/pulumi";
import * as inputs from "../types/input";
import * as outputs from "../types/output";
import * as utilities from "../utilities";

const TOKEN = "talos:machine/getConfiguration:getConfiguration";

/** Arguments of `getConfiguration` (plain values). */
export interface GetConfigurationArgs {
  /** `https://<endpoint>:6443`. */
  clusterEndpoint: string;
  clusterName: string;
  /** YAML patches applied to the generated configuration, in order. */
  configPatches?: string[];
  /** Emit documentation comments (large; keep false). */
  docs?: boolean;
  /** Emit examples (large; keep false). */
  examples?: boolean;
  kubernetesVersion?: string;
  machineSecrets: outputs.machine.MachineSecrets;
  /** `controlplane` or `worker`. */
  machineType: string;
  /** The Talos version whose config contract to follow. */
  talosVersion?: string;
}

/** Arguments of `getConfigurationOutput` (inputs). */
export interface GetConfigurationOutputArgs {
  clusterEndpoint: pulumi.Input<string>;
  clusterName: pulumi.Input<string>;
  configPatches?: pulumi.Input<pulumi.Input<string>[]>;
  docs?: pulumi.Input<boolean>;
  examples?: pulumi.Input<boolean>;
  kubernetesVersion?: pulumi.Input<string>;
  machineSecrets: pulumi.Input<inputs.machine.MachineSecretsArgs>;
  machineType: pulumi.Input<string>;
  talosVersion?: pulumi.Input<string>;
}

/** The generated configuration and the arguments it came from. */
export interface GetConfigurationResult {
  readonly clusterEndpoint: string;
  readonly clusterName: string;
  readonly configPatches?: string[];
  readonly docs?: boolean;
  readonly examples?: boolean;
  readonly id: string;
  readonly kubernetesVersion?: string;
  /** The machine configuration YAML (holds private keys: treat as secret). */
  readonly machineConfiguration: string;
  readonly machineSecrets: outputs.machine.MachineSecrets;
  readonly machineType: string;
  readonly talosVersion?: string;
}

function invokeArgs(args: GetConfigurationArgs | GetConfigurationOutputArgs): pulumi.Inputs {
  return {
    clusterEndpoint: args.clusterEndpoint,
    clusterName: args.clusterName,
    configPatches: args.configPatches,
    docs: args.docs,
    examples: args.examples,
    kubernetesVersion: args.kubernetesVersion,
    machineSecrets: args.machineSecrets,
    machineType: args.machineType,
    talosVersion: args.talosVersion,
  };
}

/** Generates the machine configuration of one machine type. */
export function getConfiguration(
  args: GetConfigurationArgs,
  opts?: pulumi.InvokeOptions,
): Promise<GetConfigurationResult> {
  return utilities.invoke(TOKEN, invokeArgs(args), opts);
}

/** Generates the machine configuration of one machine type, from inputs. */
export function getConfigurationOutput(
  args: GetConfigurationOutputArgs,
  opts?: pulumi.InvokeOutputOptions,
): pulumi.Output<GetConfigurationResult> {
  return utilities.invokeOutput(TOKEN, invokeArgs(args), opts);
}

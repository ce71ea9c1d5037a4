import * as pulumi from "@pulumi/pulumi";
import * as inputs from "../types/input";
import * as outputs from "../types/output";
import * as utilities from "../utilities";

const TOKEN = "talos:client/getConfiguration:getConfiguration";

/** Arguments of `getConfiguration` (plain values). */
export interface GetConfigurationArgs {
  clientConfiguration: outputs.client.GetConfigurationClientConfiguration;
  clusterName: string;
  /** Talos API endpoints (control-plane addresses). */
  endpoints?: string[];
  /** Default target nodes. */
  nodes?: string[];
}

/** Arguments of `getConfigurationOutput` (inputs). */
export interface GetConfigurationOutputArgs {
  clientConfiguration: pulumi.Input<inputs.client.GetConfigurationClientConfigurationArgs>;
  clusterName: pulumi.Input<string>;
  endpoints?: pulumi.Input<pulumi.Input<string>[]>;
  nodes?: pulumi.Input<pulumi.Input<string>[]>;
}

/** A talosconfig and the arguments it came from. */
export interface GetConfigurationResult {
  readonly clientConfiguration: outputs.client.GetConfigurationClientConfiguration;
  readonly clusterName: string;
  readonly endpoints?: string[];
  readonly id: string;
  readonly nodes?: string[];
  /** The talosconfig YAML (holds the admin client key: treat as secret). */
  readonly talosConfig: string;
}

function invokeArgs(args: GetConfigurationArgs | GetConfigurationOutputArgs): pulumi.Inputs {
  return {
    clientConfiguration: args.clientConfiguration,
    clusterName: args.clusterName,
    endpoints: args.endpoints,
    nodes: args.nodes,
  };
}

/** Renders a talosconfig for talosctl. */
export function getConfiguration(
  args: GetConfigurationArgs,
  opts?: pulumi.InvokeOptions,
): Promise<GetConfigurationResult> {
  return utilities.invoke(TOKEN, invokeArgs(args), opts);
}

/** Renders a talosconfig for talosctl, from inputs. */
export function getConfigurationOutput(
  args: GetConfigurationOutputArgs,
  opts?: pulumi.InvokeOutputOptions,
): pulumi.Output<GetConfigurationResult> {
  return utilities.invokeOutput(TOKEN, invokeArgs(args), opts);
}

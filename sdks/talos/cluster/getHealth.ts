import * as pulumi from "@pulumi/pulumi";
import * as inputs from "../types/input";
import * as outputs from "../types/output";
import * as utilities from "../utilities";

const TOKEN = "talos:cluster/getHealth:getHealth";

/** Arguments of `getHealth` (plain values). */
export interface GetHealthArgs {
  clientConfiguration: outputs.client.GetConfigurationClientConfiguration;
  controlPlaneNodes: string[];
  endpoints: string[];
  skipKubernetesChecks?: boolean;
  timeouts?: outputs.cluster.GetHealthTimeouts;
  workerNodes?: string[];
}

/** Arguments of `getHealthOutput` (inputs). */
export interface GetHealthOutputArgs {
  clientConfiguration: pulumi.Input<inputs.cluster.GetHealthClientConfigurationArgs>;
  controlPlaneNodes: pulumi.Input<pulumi.Input<string>[]>;
  endpoints: pulumi.Input<pulumi.Input<string>[]>;
  skipKubernetesChecks?: pulumi.Input<boolean>;
  timeouts?: pulumi.Input<inputs.cluster.GetHealthTimeoutsArgs>;
  workerNodes?: pulumi.Input<pulumi.Input<string>[]>;
}

/** The checked nodes; the invoke fails when the cluster is not healthy. */
export interface GetHealthResult {
  readonly clientConfiguration: outputs.client.GetConfigurationClientConfiguration;
  readonly controlPlaneNodes: string[];
  readonly endpoints: string[];
  readonly id: string;
  readonly skipKubernetesChecks?: boolean;
  readonly timeouts?: outputs.cluster.GetHealthTimeouts;
  readonly workerNodes?: string[];
}

function invokeArgs(args: GetHealthArgs | GetHealthOutputArgs): pulumi.Inputs {
  return {
    clientConfiguration: args.clientConfiguration,
    controlPlaneNodes: args.controlPlaneNodes,
    endpoints: args.endpoints,
    skipKubernetesChecks: args.skipKubernetesChecks,
    timeouts: args.timeouts,
    workerNodes: args.workerNodes,
  };
}

/** Waits for the cluster to be healthy (etcd, Kubernetes components, nodes). */
export function getHealth(
  args: GetHealthArgs,
  opts?: pulumi.InvokeOptions,
): Promise<GetHealthResult> {
  return utilities.invoke(TOKEN, invokeArgs(args), opts);
}

/** Waits for the cluster to be healthy, from inputs. */
export function getHealthOutput(
  args: GetHealthOutputArgs,
  opts?: pulumi.InvokeOutputOptions,
): pulumi.Output<GetHealthResult> {
  return utilities.invokeOutput(TOKEN, invokeArgs(args), opts);
}

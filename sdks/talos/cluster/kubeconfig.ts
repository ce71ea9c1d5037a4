import * as pulumi from "@pulumi/pulumi";
import * as inputs from "../types/input";
import * as outputs from "../types/output";
import * as utilities from "../utilities";

/** Inputs of `talos.cluster.Kubeconfig`. */
export interface KubeconfigArgs {
  /** Renew the client certificate this long before it expires. @default "720h" */
  certificateRenewalDuration?: pulumi.Input<string>;
  clientConfiguration: pulumi.Input<inputs.cluster.KubeconfigClientConfiguration>;
  /** The endpoint to reach the node through (defaults to `node`). */
  endpoint?: pulumi.Input<string>;
  /** A control-plane node. */
  node: pulumi.Input<string>;
  timeouts?: pulumi.Input<inputs.cluster.KubeconfigTimeouts>;
}

/** Stored state of `talos.cluster.Kubeconfig`. */
export interface KubeconfigState extends Partial<KubeconfigArgs> {
  kubeconfigRaw?: pulumi.Input<string>;
  kubernetesClientConfiguration?: pulumi.Input<outputs.cluster.KubeconfigKubernetesClientConfiguration>;
}

/** Retrieves the admin kubeconfig of a cluster from a control-plane node. */
export class Kubeconfig extends pulumi.CustomResource {
  /** @internal */
  public static readonly __pulumiType = "talos:cluster/kubeconfig:Kubeconfig";

  /** Reads an existing Kubeconfig's state. */
  public static get(
    name: string,
    id: pulumi.Input<pulumi.ID>,
    state?: KubeconfigState,
    opts?: pulumi.CustomResourceOptions,
  ): Kubeconfig {
    return new Kubeconfig(name, state as KubeconfigArgs, { ...opts, id });
  }

  /** True when `obj` is a Kubeconfig, across copies of this package. */
  public static isInstance(obj: unknown): obj is Kubeconfig {
    return (
      pulumi.CustomResource.isInstance(obj) && (obj as any).__pulumiType === Kubeconfig.__pulumiType
    );
  }

  declare readonly certificateRenewalDuration: pulumi.Output<string>;
  declare readonly clientConfiguration: pulumi.Output<outputs.cluster.KubeconfigClientConfiguration>;
  declare readonly endpoint: pulumi.Output<string>;
  /** The kubeconfig YAML (secret). */
  declare readonly kubeconfigRaw: pulumi.Output<string>;
  /** The kubeconfig's parts. */
  declare readonly kubernetesClientConfiguration: pulumi.Output<outputs.cluster.KubeconfigKubernetesClientConfiguration>;
  declare readonly node: pulumi.Output<string>;
  declare readonly timeouts: pulumi.Output<outputs.cluster.KubeconfigTimeouts | undefined>;

  constructor(name: string, args: KubeconfigArgs, opts?: pulumi.CustomResourceOptions);
  constructor(
    name: string,
    argsOrState: KubeconfigArgs | KubeconfigState,
    opts?: pulumi.CustomResourceOptions,
  ) {
    const inputs: pulumi.Inputs = {};
    if (opts?.id) {
      Object.assign(inputs, argsOrState ?? {});
    } else {
      const args = argsOrState as KubeconfigArgs | undefined;
      if (args?.clientConfiguration === undefined && !opts?.urn) {
        throw new Error("Missing required property 'clientConfiguration'");
      }
      if (args?.node === undefined && !opts?.urn) {
        throw new Error("Missing required property 'node'");
      }
      inputs["certificateRenewalDuration"] = args?.certificateRenewalDuration;
      inputs["clientConfiguration"] = args?.clientConfiguration;
      inputs["endpoint"] = args?.endpoint;
      inputs["node"] = args?.node;
      inputs["timeouts"] = args?.timeouts;
      inputs["kubeconfigRaw"] = undefined;
      inputs["kubernetesClientConfiguration"] = undefined;
    }
    super(
      Kubeconfig.__pulumiType,
      name,
      inputs,
      utilities.withSecretOutputs(utilities.withDefaults(opts), ["kubeconfigRaw"]),
    );
  }
}

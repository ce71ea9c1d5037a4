import * as oci from "@pulumi/oci";
import * as pulumi from "@pulumi/pulumi";
import type { OciNodeSpec, OciSpec } from "../../spec/types";
import type { ConfigDelivery, TalosMachine } from "../machine";
import { spread } from "../placement";
import type { OciPlatform } from "./platform";

/** Inputs of an {@link OciNode}. */
export interface OciNodeArgs {
  readonly node: OciNodeSpec;
  readonly settings: OciSpec;
  readonly platform: OciPlatform;
  /** The node's complete machine config (secret), checked against OCI's metadata limit. */
  readonly machineConfiguration: pulumi.Output<string>;
  readonly clusterName: string;
  readonly protect: boolean;
}

/**
 * A Talos node as an OCI instance. Its machine config travels as base64 `metadata.user_data`, read by
 * Talos from the instance metadata service at first boot, so it boots configured with no call back to
 * us. Later changes to the user data and the image are ignored: a config change never recreates the
 * instance; it is pushed over the Talos API (or rolled by hand, see the README).
 */
export class OciNode extends pulumi.ComponentResource implements TalosMachine {
  public readonly talosAddress: pulumi.Output<string>;
  public readonly kubeletAddress: pulumi.Output<string>;
  public readonly delivery: ConfigDelivery;
  public readonly instance: oci.core.Instance;
  public readonly machineResource: oci.core.Instance;

  constructor(name: string, args: OciNodeArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:oci:Node", name, {}, opts);
    const { node, settings, platform } = args;
    this.delivery = { kind: "userData", pushChanges: node.pushConfig };
    const instance = node.oci;
    const domains = platform.availabilityDomains;
    const placement = domains.apply((list) => spread(node.placement.poolIndex, list.length));

    this.instance = new oci.core.Instance(
      `${name}-instance`,
      {
        compartmentId: settings.compartmentId,
        displayName: node.name,
        availabilityDomain:
          node.placement.zone ??
          pulumi.all([domains, placement]).apply(([list, p]) => list[p.domainIndex]),
        faultDomain: instance.faultDomain ?? placement.faultDomain,
        shape: instance.shape,
        ...(instance.flex
          ? { shapeConfig: { ocpus: instance.ocpus, memoryInGbs: instance.memoryGbs } }
          : {}),
        sourceDetails: {
          sourceType: "image",
          sourceId: platform.imageId,
          // The provider takes the size as a string.
          bootVolumeSizeInGbs: String(instance.bootVolumeGbs),
        },
        createVnicDetails: {
          subnetId: instance.subnetId,
          assignPublicIp: String(instance.assignPublicIp),
          ...(instance.privateIp ? { privateIp: instance.privateIp } : {}),
          ...(instance.assignIpv6 ? { assignIpv6ip: true } : {}),
          ...(instance.ipv6Address
            ? { ipv6addressIpv6subnetCidrPairDetails: [{ ipv6address: instance.ipv6Address }] }
            : {}),
          // The cluster's managed NSGs (oci.manageNsgs), then the ones the stack lists.
          nsgIds: [
            ...(platform.nodeNsgId ? [platform.nodeNsgId] : []),
            ...(node.role === "controlplane" && platform.controlPlaneNsgId
              ? [platform.controlPlaneNsgId]
              : []),
            ...instance.nsgIds,
          ],
          // A hostname label needs a subnet (and VCN) with DNS enabled; oci.hostnameLabel: false skips it.
          ...(instance.hostnameLabel ? { hostnameLabel: node.name } : {}),
        },
        launchOptions: { networkType: "PARAVIRTUALIZED" },
        // OCI's default (ALLOW_DOWNTIME) reboots a running instance when an update needs it (a new
        // shape, OCPUs or memory), every instance of a run at once. AVOID_DOWNTIME refuses such an
        // update instead and leaves the instance as it is (docs/platforms.md: how to make it).
        updateOperationConstraint: "AVOID_DOWNTIME",
        metadata: {
          user_data: pulumi.secret(
            args.machineConfiguration.apply((config) => Buffer.from(config).toString("base64")),
          ),
        },
        freeformTags: {
          ...settings.freeformTags,
          "talos-cluster": args.clusterName,
          "talos-role": node.role,
        },
      },
      {
        parent: this,
        provider: platform.provider,
        protect: args.protect,
        // The image id alone does not say the image can boot this shape yet.
        dependsOn: platform.imageReadyFor(instance.shape),
        ignoreChanges: ["metadata", "sourceDetails.sourceId"],
        // A replacement (new subnet, private IP, availability domain) is the same node: its name,
        // its hostname label (unique among a subnet's VNICs), often its fixed private IP. It
        // cannot be created beside the old instance.
        deleteBeforeReplace: true,
      },
    );
    this.machineResource = this.instance;
    // Never the public IPv4 (assignPublicIp): it is NAT in front of the VNIC, Talos on OCI never
    // learns it, and its API certificate names only the VNIC's addresses, so every apply, bootstrap
    // and health check against it would fail TLS.
    this.talosAddress = pulumi.output(node.declaredAddress ?? this.instance.privateIp);
    // The public IPv4 is NAT in front of the VNIC: the kubelet only ever sees the private address.
    this.kubeletAddress = pulumi.output(node.declaredKubeletAddress ?? this.instance.privateIp);
    this.registerOutputs({ talosAddress: this.talosAddress, kubeletAddress: this.kubeletAddress });
  }
}

import * as openstack from "@pulumi/openstack";
import * as pulumi from "@pulumi/pulumi";
import type { OpenstackSpec } from "../../config/types";
import type { PlatformImage } from "../../talos/imageFactory";

/** Inputs of an {@link OpenstackPlatform}. */
export interface OpenstackPlatformArgs {
  readonly settings: OpenstackSpec;
  readonly clusterName: string;
  readonly talosVersion: string;
  /** The `openstack` image of the cluster's schematic, uploaded when the stack asks for it. */
  readonly image: PlatformImage;
  /** The control planes' VIP, when they share one. */
  readonly vip?: string;
  /** An application credential secret (secret); else clouds.yaml or the OS_* variables. */
  readonly applicationCredentialSecret?: pulumi.Output<string>;
}

/** Ports a node's Talos and Kubernetes APIs listen on, opened to `apiAllowedCidrs`. */
const API_PORTS: readonly { from: number; to: number; what: string }[] = [
  { from: 50000, to: 50001, what: "Talos API (apid, trustd)" },
  { from: 6443, to: 6443, what: "Kubernetes API" },
];

/**
 * The OpenStack provider (credentials from the OS_* variables or clouds.yaml, never the stack file),
 * the Talos image, a security group that lets the Talos and Kubernetes APIs in and the nodes talk to
 * each other, and the VIP's port when control planes share a VIP.
 */
export class OpenstackPlatform extends pulumi.ComponentResource {
  public readonly provider: openstack.Provider;
  public readonly imageId: pulumi.Output<string>;
  public readonly securityGroupId: pulumi.Output<string>;
  /** The port holding the VIP; control-plane ports allow it as an address pair. */
  public readonly vipPort?: openstack.networking.Port;

  constructor(name: string, args: OpenstackPlatformArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:openstack:Platform", name, {}, opts);
    const { settings, clusterName } = args;
    this.provider = new openstack.Provider(
      `${name}-provider`,
      {
        ...(settings.region ? { region: settings.region } : {}),
        ...(args.applicationCredentialSecret
          ? { applicationCredentialSecret: args.applicationCredentialSecret }
          : {}),
      },
      { parent: this },
    );
    const resourceOpts = { parent: this, provider: this.provider };
    const imageName = `talos-${args.talosVersion}-openstack-amd64`;

    this.imageId =
      "name" in settings.image
        ? openstack.images.getImageOutput(
            { name: settings.image.name, mostRecent: true },
            resourceOpts,
          ).id
        : new openstack.images.Image(
            `${clusterName}-talos-image-openstack`,
            {
              name: imageName,
              containerFormat: "bare",
              diskFormat: "raw",
              imageSourceUrl: args.image.urls.diskImage,
              decompress: true,
              visibility: "private",
              tags: ["talos", clusterName],
            },
            resourceOpts,
          ).id;

    const group = new openstack.networking.SecGroup(
      `${clusterName}-nodes`,
      { description: `Talos nodes of cluster ${clusterName}`, tags: ["talos", clusterName] },
      resourceOpts,
    );
    this.securityGroupId = group.id;
    for (const ethertype of ["IPv4", "IPv6"] as const) {
      new openstack.networking.SecGroupRule(
        `${clusterName}-nodes-internal-${ethertype.toLowerCase()}`,
        {
          securityGroupId: group.id,
          direction: "ingress",
          ethertype,
          remoteGroupId: group.id,
          description: "node to node",
        },
        resourceOpts,
      );
    }
    settings.apiAllowedCidrs.forEach((cidr, i) => {
      const ethertype = cidr.includes(":") ? "IPv6" : "IPv4";
      for (const port of API_PORTS) {
        new openstack.networking.SecGroupRule(
          `${clusterName}-nodes-api-${port.from}-${i}`,
          {
            securityGroupId: group.id,
            direction: "ingress",
            ethertype,
            protocol: "tcp",
            portRangeMin: port.from,
            portRangeMax: port.to,
            remoteIpPrefix: cidr,
            description: port.what,
          },
          resourceOpts,
        );
      }
    });

    if (args.vip) {
      this.vipPort = new openstack.networking.Port(
        `${clusterName}-vip`,
        {
          name: `${clusterName}-vip`,
          networkId: settings.networkId,
          fixedIps: [{ subnetId: settings.subnetId!, ipAddress: args.vip }],
          securityGroupIds: [group.id],
          tags: ["talos", clusterName],
        },
        resourceOpts,
      );
    }
    this.registerOutputs({ imageId: this.imageId, securityGroupId: this.securityGroupId });
  }
}

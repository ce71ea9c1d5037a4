import * as openstack from "@pulumi/openstack";
import * as pulumi from "@pulumi/pulumi";
import type { OpenstackNodeSpec, OpenstackSpec } from "../../spec/types";
import type { ConfigDelivery, TalosMachine } from "../machine";
import { spread } from "../placement";
import { flavorChangeWarning } from "./flavor";
import type { OpenstackPlatform } from "./platform";

/** Inputs of an {@link OpenstackNode}. */
export interface OpenstackNodeArgs {
  readonly node: OpenstackNodeSpec;
  readonly settings: OpenstackSpec;
  readonly platform: OpenstackPlatform;
  /** The node's complete machine config (secret); it waits for the data volume's id. */
  readonly machineConfiguration: pulumi.Output<string>;
  /** Takes the data volume's id, which the node's config selects the disk by. */
  readonly dataVolumeId?: (id: pulumi.Output<string>) => void;
  readonly clusterName: string;
  /** The control planes' VIP, allowed on this node's port when it is a control plane. */
  readonly vip?: string;
  readonly protect: boolean;
}

/**
 * A Talos node as an OpenStack instance booting from a volume made from the Talos image. Its config is
 * raw `userData` on a config drive (Talos' openstack platform reads `config-2`), so it boots configured.
 * Its port has a fixed MAC, so the config can name the link without knowing the kernel's name for it.
 * User data and image changes after creation are ignored: config changes go over the Talos API. So
 * is a new flavor, which the instance takes only when it is replaced (flavor.ts).
 */
export class OpenstackNode extends pulumi.ComponentResource implements TalosMachine {
  public readonly talosAddress: pulumi.Output<string>;
  public readonly kubeletAddress: pulumi.Output<string>;
  public readonly delivery: ConfigDelivery;
  public readonly instance: openstack.compute.Instance;
  public readonly machineResource: openstack.compute.Instance;
  public readonly port: openstack.networking.Port;

  constructor(name: string, args: OpenstackNodeArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:openstack:Node", name, {}, opts);
    const { node, settings, platform } = args;
    this.delivery = { kind: "userData", pushChanges: node.pushConfig };
    const spec = node.openstack;
    const resourceOpts = { parent: this, provider: platform.provider };
    const zones = settings.availabilityZones;
    const zone =
      node.placement.zone ??
      (zones ? zones[spread(node.placement.poolIndex, zones.length).domainIndex] : undefined);
    // Cinder's zones need not be Nova's: `openstack.volumeAvailabilityZone` names them; by default
    // a volume goes to its instance's zone, without a pinned compute host (`zone:host` is Nova's).
    const volumeZone = settings.volumeAvailabilityZone ?? zone?.split(":")[0];
    const tags = ["talos", args.clusterName, node.role];

    const fixedIps = [
      ...(spec.fixedIp ? [{ subnetId: settings.subnetId!, ipAddress: spec.fixedIp }] : []),
      ...(spec.fixedIp6 ? [{ subnetId: settings.subnet6Id!, ipAddress: spec.fixedIp6 }] : []),
    ];
    this.port = new openstack.networking.Port(
      `${name}-port`,
      {
        name: node.name,
        networkId: settings.networkId,
        macAddress: spec.mac,
        ...(fixedIps.length > 0 ? { fixedIps } : {}),
        securityGroupIds: [
          platform.securityGroupId,
          ...(node.role === "controlplane" && platform.controlPlaneSecurityGroupId
            ? [platform.controlPlaneSecurityGroupId]
            : []),
        ],
        ...(args.vip && node.role === "controlplane"
          ? { allowedAddressPairs: [{ ipAddress: args.vip }] }
          : {}),
        tags,
      },
      // The port is the node's place on the network (its MAC, its fixed addresses): a replacement
      // could not take them while the old port holds them.
      { ...resourceOpts, deleteBeforeReplace: true },
    );

    const boot = new openstack.blockstorage.Volume(
      `${name}-boot`,
      {
        name: `${node.name}-boot`,
        size: spec.volumeSize,
        imageId: platform.imageId,
        ...(spec.volumeType ? { volumeType: spec.volumeType } : {}),
        ...(volumeZone ? { availabilityZone: volumeZone } : {}),
      },
      // A new Talos image is for new nodes; existing ones are upgraded in place.
      { ...resourceOpts, protect: args.protect, ignoreChanges: ["imageId"] },
    );
    const data =
      spec.dataVolumeSize === undefined
        ? undefined
        : new openstack.blockstorage.Volume(
            `${name}-data`,
            {
              name: `${node.name}-data`,
              size: spec.dataVolumeSize,
              ...(volumeZone ? { availabilityZone: volumeZone } : {}),
            },
            resourceOpts,
          );
    if (data) args.dataVolumeId?.(data.id);

    this.instance = new openstack.compute.Instance(
      `${name}-instance`,
      {
        name: node.name,
        flavorName: spec.flavor,
        ...(zone ? { availabilityZone: zone } : {}),
        blockDevices: [
          {
            sourceType: "volume",
            uuid: boot.id,
            destinationType: "volume",
            bootIndex: 0,
            deleteOnTermination: false,
          },
          ...(data
            ? [
                {
                  sourceType: "volume",
                  uuid: data.id,
                  destinationType: "volume",
                  bootIndex: -1,
                  deleteOnTermination: false,
                },
              ]
            : []),
        ],
        networks: [{ port: this.port.id }],
        ...(node.role === "controlplane" && platform.controlPlaneServerGroupId
          ? { schedulerHints: [{ group: platform.controlPlaneServerGroupId }] }
          : {}),
        userData: pulumi.secret(args.machineConfiguration),
        configDrive: true,
        stopBeforeDestroy: true,
        metadata: { "talos-cluster": args.clusterName, "talos-role": node.role },
        tags,
      },
      {
        ...resourceOpts,
        protect: args.protect,
        // A new flavor would be a resize in place (flavor.ts); the instance keeps its flavor until
        // it is replaced, which takes the stack file's.
        ignoreChanges: ["userData", "flavorName"],
        // Its replacement boots from the same port and volumes, each of which attaches to one
        // server only (Nova's PortInUse, Cinder's non-multiattach volumes): the old one lets go first.
        deleteBeforeReplace: true,
      },
    );
    this.machineResource = this.instance;
    pulumi.all([this.instance.flavorName, this.instance.urn]).apply(([running, urn]) => {
      const warning = flavorChangeWarning(node, running, urn);
      if (warning) void pulumi.log.warn(warning, this.instance);
    });
    this.talosAddress = pulumi.output(
      node.declaredAddress ?? this.port.allFixedIps.apply((ips) => ips[0]),
    );
    this.kubeletAddress = pulumi.output(
      node.declaredKubeletAddress ??
        this.port.allFixedIps.apply((ips) => ips.find((ip) => !ip.includes(":")) ?? ips[0]),
    );
    this.registerOutputs({ talosAddress: this.talosAddress, kubeletAddress: this.kubeletAddress });
  }
}

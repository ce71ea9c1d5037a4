import * as proxmoxve from "@muhlba91/pulumi-proxmoxve";
import * as pulumi from "@pulumi/pulumi";
import type { ProxmoxSpec } from "../../spec/types";
import { diskImageUrl, type PlatformImage } from "../../talos/imageFactory";
import { imageFileName, PROXMOX_IMAGE_FORMATS, type ProxmoxImageFormat } from "./imageFormat";

/** Proxmox connection settings plus the API token (secret). */
export interface ProxmoxPlatformArgs {
  readonly settings: ProxmoxSpec;
  /** `user@realm!tokenid=uuid`; when absent the provider reads PROXMOX_VE_API_TOKEN. */
  readonly apiToken?: pulumi.Output<string>;
  /** The SSH private key (secret), for proxmox.ssh without the agent. */
  readonly sshPrivateKey?: pulumi.Output<string>;
  readonly clusterName: string;
  readonly talosVersion: string;
  /** The nocloud image every VM boots. */
  readonly image: PlatformImage;
}

/** Seconds a host may take to download the image (the provider's default is 600). */
const IMAGE_DOWNLOAD_TIMEOUT_SECONDS = 1800;

/** The provider's `ssh` block: only when the stack asks for SSH (the API-only path needs none). */
function providerSsh(
  settings: ProxmoxSpec,
  privateKey: pulumi.Output<string> | undefined,
): proxmoxve.types.input.ProviderSsh | undefined {
  const ssh = settings.ssh;
  if (!ssh) return undefined;
  const nodes = Object.entries(settings.sshAddresses).map(([name, address]) => ({
    name,
    address,
  }));
  return {
    username: ssh.username,
    agent: ssh.agent,
    ...(!ssh.agent && privateKey ? { privateKey } : {}),
    ...(nodes.length > 0 ? { nodes } : {}),
  };
}

/** The Proxmox provider and one Talos nocloud image download per Proxmox host that runs a node. */
export class ProxmoxPlatform extends pulumi.ComponentResource {
  /** The provider every Proxmox resource of this cluster uses. */
  public readonly provider: proxmoxve.Provider;
  /** How the image gets onto the hosts and into the disks. */
  public readonly imageFormat: ProxmoxImageFormat;
  private readonly images = new Map<string, proxmoxve.download.File>();

  constructor(
    name: string,
    private readonly args: ProxmoxPlatformArgs,
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("platform:proxmox:Platform", name, {}, opts);
    this.imageFormat = PROXMOX_IMAGE_FORMATS[args.settings.imageFormat];
    const ssh = providerSsh(args.settings, args.sshPrivateKey);
    this.provider = new proxmoxve.Provider(
      `${name}-provider`,
      {
        endpoint: args.settings.endpoint,
        insecure: args.settings.insecure,
        apiToken: args.apiToken,
        ...(ssh ? { ssh } : {}),
      },
      { parent: this },
    );
    this.registerOutputs({});
  }

  /** The Talos image on `host`'s image datastore, downloaded once per host. */
  imageOn(host: string): proxmoxve.download.File {
    const known = this.images.get(host);
    if (known) return known;
    const datastore =
      this.args.settings.hosts.find((h) => h.name === host)?.imageDatastore ?? "local";
    const { image, talosVersion, clusterName } = this.args;
    const format = this.imageFormat;
    const file = new proxmoxve.download.File(
      `${this.args.clusterName}-talos-image-${host}`,
      {
        nodeName: host,
        datastoreId: datastore,
        contentType: format.contentType,
        url: image.schematicId.apply((id) =>
          diskImageUrl(id, talosVersion, "nocloud", "amd64", format.format),
        ),
        fileName: image.schematicId.apply((id) =>
          imageFileName(clusterName, talosVersion, id, format),
        ),
        ...(format.decompression ? { decompressionAlgorithm: format.decompression } : {}),
        overwrite: false,
        uploadTimeout: IMAGE_DOWNLOAD_TIMEOUT_SECONDS,
      },
      { parent: this, provider: this.provider },
    );
    this.images.set(host, file);
    return file;
  }
}

// Which Talos image each platform boots and installs, from the Image Factory. Pure helpers plus one
// small class that registers at most one schematic and one URL lookup per platform.
import * as pulumi from "@pulumi/pulumi";
import * as talos from "@pulumiverse/talos";
import { stringify } from "yaml";
import type { Architecture, ImageFactorySpec, Platform } from "../spec/types";
import { IMAGE_FACTORY_URL, VANILLA_SCHEMATIC_ID, imageExtensions } from "./schematic";

/** The Talos image platform each node platform boots (`nocloud-amd64.raw.xz`, `metal-installer`, …). */
const IMAGE_PLATFORM: Readonly<Record<Platform, string>> = {
  proxmox: "nocloud",
  baremetal: "metal",
  oci: "oracle",
  openstack: "openstack",
};

/** The schematic YAML for a platform and architecture, or undefined when the vanilla (or a named) schematic will do. */
function schematicYaml(
  factory: ImageFactorySpec,
  platform: Platform,
  architecture: Architecture = "amd64",
): string | undefined {
  const extensions = imageExtensions(factory, platform, architecture);
  if (extensions.length === 0 && factory.extraKernelArgs.length === 0) return undefined;
  return stringify({
    customization: {
      ...(factory.extraKernelArgs.length > 0
        ? { extraKernelArgs: [...factory.extraKernelArgs] }
        : {}),
      ...(extensions.length > 0 ? { systemExtensions: { officialExtensions: extensions } } : {}),
    },
  });
}

/** True when a platform's amd64 image carries the QEMU guest agent (so the VM may enable its agent channel). */
export function hasGuestAgent(factory: ImageFactorySpec, platform: Platform): boolean {
  return imageExtensions(factory, platform, "amd64").includes("siderolabs/qemu-guest-agent");
}

/**
 * A disk image's URL on the Image Factory: `<platform>-<arch>.<format>`, the format being the disk
 * format and, after it, the compression (`raw`, `qcow2`, `raw.xz`, `raw.zst`, `raw.gz`): the
 * Factory builds exactly the file named, so the name asked for is the format received.
 */
export function diskImageUrl(
  schematicId: string,
  talosVersion: string,
  platform: string,
  architecture: Architecture,
  format: string,
): string {
  return `${IMAGE_FACTORY_URL}/image/${schematicId}/${talosVersion}/${platform}-${architecture}.${format}`;
}

/** A platform's image: its schematic and the Image Factory URLs for the cluster's Talos version. */
export interface PlatformImage {
  readonly schematicId: pulumi.Output<string>;
  readonly urls: pulumi.Output<talos.types.output.imagefactory.GetUrlsUrls>;
}

/** Resolves each platform's image once, registering schematics as children of `parent`. */
export class ImageCatalog {
  private readonly schematics = new Map<string, pulumi.Output<string>>();
  private readonly images = new Map<string, PlatformImage>();

  constructor(
    private readonly clusterName: string,
    private readonly talosVersion: string,
    private readonly factory: ImageFactorySpec,
    private readonly parent: pulumi.Resource,
  ) {}

  /** The image nodes of `platform` boot and install, for one CPU architecture. */
  forPlatform(platform: Platform, architecture: Architecture = "amd64"): PlatformImage {
    const key = `${platform}/${architecture}`;
    const known = this.images.get(key);
    if (known) return known;
    const schematicId = this.schematicFor(platform, architecture);
    const urls = talos.imagefactory.getUrlsOutput(
      {
        schematicId,
        talosVersion: this.talosVersion,
        platform: IMAGE_PLATFORM[platform],
        architecture,
      },
      { parent: this.parent },
    ).urls;
    const image = { schematicId, urls };
    this.images.set(key, image);
    return image;
  }

  /**
   * One schematic per platform and architecture, since extensions may be architecture-specific
   * (microcode is x86 only). amd64 keeps the platform's plain name.
   */
  private schematicFor(platform: Platform, architecture: Architecture): pulumi.Output<string> {
    const key = `${platform}/${architecture}`;
    const known = this.schematics.get(key);
    if (known) return known;
    const yaml = schematicYaml(this.factory, platform, architecture);
    const suffix = architecture === "amd64" ? "" : `-${architecture}`;
    const id = yaml
      ? new talos.imagefactory.Schematic(
          `${this.clusterName}-schematic-${platform}${suffix}`,
          { schematic: yaml },
          { parent: this.parent },
        ).id
      : pulumi.output(this.factory.schematicId ?? VANILLA_SCHEMATIC_ID);
    this.schematics.set(key, id);
    return id;
  }
}

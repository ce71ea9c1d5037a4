// Which Talos image each platform boots and installs, from the Image Factory. Pure helpers plus one
// small class that registers at most one schematic and one URL lookup per platform.
import * as pulumi from "@pulumi/pulumi";
import * as talos from "@pulumiverse/talos";
import { stringify } from "yaml";
import type { ImageFactorySpec } from "../config/types";
import type { Platform } from "../config/schema";

/** The schematic of the plain Talos image (no extensions, no kernel args). */
export const VANILLA_SCHEMATIC_ID =
  "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba";

/** The Talos image platform each node platform boots (`nocloud-amd64.raw.xz`, `metal-installer`, …). */
export const IMAGE_PLATFORM: Readonly<Record<Platform, string>> = {
  proxmox: "nocloud",
  baremetal: "metal",
  oci: "oracle",
  openstack: "openstack",
};

/** The schematic YAML for a platform, or undefined when the vanilla (or a named) schematic will do. */
export function schematicYaml(factory: ImageFactorySpec, platform: Platform): string | undefined {
  const extensions = [
    ...new Set([...factory.extensions, ...(factory.platformExtensions[platform] ?? [])]),
  ].sort();
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

/** True when a platform's image carries the QEMU guest agent (so the VM may enable its agent channel). */
export function hasGuestAgent(factory: ImageFactorySpec, platform: Platform): boolean {
  return [...factory.extensions, ...(factory.platformExtensions[platform] ?? [])].includes(
    "siderolabs/qemu-guest-agent",
  );
}

/** A platform's image: its schematic and the Image Factory URLs for the cluster's Talos version. */
export interface PlatformImage {
  readonly schematicId: pulumi.Output<string>;
  readonly urls: pulumi.Output<talos.types.output.imagefactory.GetUrlsUrls>;
}

/** Resolves each platform's image once, registering schematics as children of `parent`. */
export class ImageCatalog {
  private readonly schematics = new Map<Platform, pulumi.Output<string>>();
  private readonly images = new Map<string, PlatformImage>();

  constructor(
    private readonly clusterName: string,
    private readonly talosVersion: string,
    private readonly factory: ImageFactorySpec,
    private readonly parent: pulumi.Resource,
  ) {}

  /** The image nodes of `platform` boot and install, for one CPU architecture. */
  forPlatform(platform: Platform, architecture: "amd64" | "arm64" = "amd64"): PlatformImage {
    const key = `${platform}/${architecture}`;
    const known = this.images.get(key);
    if (known) return known;
    const schematicId = this.schematicFor(platform);
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

  /** One schematic per platform, whatever the architecture (schematics are architecture-neutral). */
  private schematicFor(platform: Platform): pulumi.Output<string> {
    const known = this.schematics.get(platform);
    if (known) return known;
    const yaml = schematicYaml(this.factory, platform);
    const id = yaml
      ? new talos.imagefactory.Schematic(
          `${this.clusterName}-schematic-${platform}`,
          { schematic: yaml },
          { parent: this.parent },
        ).id
      : pulumi.output(this.factory.schematicId ?? VANILLA_SCHEMATIC_ID);
    this.schematics.set(platform, id);
    return id;
  }
}

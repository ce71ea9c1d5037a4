// The foundation's non-secret values the app layer needs, published as a plain object in the state
// bucket. A StackReference to a gcpkms:// stack needs that stack's key even for non-secret outputs
// (the engine builds the referenced stack's secrets manager first: pulumi/pulumi#21436), and CI's
// identities never get the foundation's key; every CI identity may read the bucket, none may write
// this object (docs/credentials.md).
import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";

/** What is published: exactly what the app layer reads, nothing secret. */
export const publishedFoundationSchema = z.strictObject({
  endpoint: z.string().regex(/^https:\/\/\S+$/),
  // A PEM block, never a key.
  kubernetesCaCertificate: z
    .string()
    .regex(/^-----BEGIN [A-Z0-9 ]+-----/)
    .refine((pem) => !/PRIVATE/.test(pem), { error: "a private key is never published" }),
  clusterName: z.string().min(1),
});
export type PublishedFoundationValues = z.infer<typeof publishedFoundationSchema>;

/** `gs://bucket[/prefix]` → the bucket and the object of one foundation stack's values. */
export function publishedObject(
  backendUrl: string,
  stack: string,
): { readonly bucket: string; readonly name: string } | undefined {
  const gs = /^gs:\/\/([^/?]+)\/?([^?]*)/.exec(backendUrl);
  if (!gs) return undefined;
  const prefix = gs[2].replace(/\/$/, "");
  return {
    bucket: gs[1],
    name: `${prefix ? `${prefix}/` : ""}.platform-published/talos-platform/${stack}.json`,
  };
}

/** Publishes the values as `<bucket>/.platform-published/talos-platform/<stack>.json`. */
export class PublishedFoundation extends pulumi.ComponentResource {
  constructor(
    name: string,
    args: {
      readonly object: { readonly bucket: string; readonly name: string };
      readonly values: pulumi.Input<PublishedFoundationValues>;
      readonly provider: gcp.Provider;
    },
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("platform:gcp:PublishedFoundation", name, {}, opts);
    new gcp.storage.BucketObject(
      `${name}-object`,
      {
        bucket: args.object.bucket,
        name: args.object.name,
        contentType: "application/json",
        // unsecret: the endpoint and CA certificate are public by nature, and a secret input
        // would keep them from the app layer's CI runs (the point of this object).
        content: pulumi.unsecret(pulumi.output(args.values)).apply((values) => {
          const checked = publishedFoundationSchema.parse(values);
          return `${JSON.stringify(checked, null, 2)}\n`;
        }),
      },
      { parent: this, provider: args.provider },
    );
    this.registerOutputs({});
  }
}

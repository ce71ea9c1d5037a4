import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";

/** Inputs of a {@link StateBucket}. */
export interface StateBucketArgs {
  readonly project: string;
  /** Globally unique bucket name. */
  readonly bucketName: string;
  /** Bucket location, e.g. EU or europe-west3. */
  readonly location: string;
  /** Keep this many older versions of each state file. @default 20 */
  readonly keepVersions?: number;
  /** A KMS key for the `gcpkms://` secrets provider of the other layers' stacks. */
  readonly secretsKey?: {
    readonly keyRing: string;
    readonly cryptoKey: string;
    readonly location: string;
  };
  /** One key per (layer, environment), `<layer>-<environment>`, for CI's identities to split. */
  readonly secretsKeys?: {
    readonly keyRing: string;
    readonly location: string;
    readonly environments: readonly string[];
  };
  readonly provider: gcp.Provider;
}

/** The layers whose stacks keep state in the bucket, each with its own key per environment. */
export const SECRETS_KEY_LAYERS = ["foundation", "app"] as const;
export type SecretsKeyLayer = (typeof SECRETS_KEY_LAYERS)[number];

/** A created key: its id (`projects/…/cryptoKeys/…`) and the `gcpkms://` URL of it. */
export interface SecretsKey {
  readonly id: pulumi.Output<string>;
  readonly secretsProvider: pulumi.Output<string>;
}

/**
 * The bucket every other layer keeps its Pulumi state in: versioned (a bad write can be rolled back),
 * uniform bucket-level access, public access prevented, protected. Optionally the KMS key their
 * secrets are encrypted with, protected too.
 */
export class StateBucket extends pulumi.ComponentResource {
  /** `gs://<bucket>`: the backend URL of the foundation and app layers. */
  public readonly backendUrl: pulumi.Output<string>;
  /** `gcpkms://projects/…/cryptoKeys/…`, when a secrets key was asked for. */
  public readonly secretsProvider?: pulumi.Output<string>;
  /** The bucket's name. */
  public readonly bucketName: pulumi.Output<string>;
  /** `secretsKeys`' keys, by layer, then environment. */
  public readonly keys: Record<SecretsKeyLayer, Record<string, SecretsKey>> = {
    foundation: {},
    app: {},
  };

  constructor(name: string, args: StateBucketArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:gcp:StateBucket", name, {}, opts);
    const resourceOpts = { parent: this, provider: args.provider };
    const bucket = new gcp.storage.Bucket(
      `${name}-bucket`,
      {
        name: args.bucketName,
        project: args.project,
        location: args.location,
        versioning: { enabled: true },
        uniformBucketLevelAccess: true,
        publicAccessPrevention: "enforced",
        forceDestroy: false,
        lifecycleRules: [
          {
            action: { type: "Delete" },
            condition: { numNewerVersions: args.keepVersions ?? 20, withState: "ARCHIVED" },
          },
        ],
        labels: { purpose: "pulumi-state" },
      },
      { ...resourceOpts, protect: true },
    );
    this.backendUrl = pulumi.interpolate`gs://${bucket.name}`;
    this.bucketName = bucket.name;
    // One key ring per name and location, shared by the legacy key and the per-stack keys.
    const rings = new Map<string, gcp.kms.KeyRing>();
    const ring = (keyRing: string, location: string) => {
      const id = `${location}/${keyRing}`;
      let found = rings.get(id);
      if (!found) {
        const suffix = rings.size === 0 ? "" : `-${keyRing}-${location}`.toLowerCase();
        found = new gcp.kms.KeyRing(
          `${name}-secrets-key-ring${suffix}`,
          { name: keyRing, location, project: args.project },
          { ...resourceOpts, protect: true },
        );
        rings.set(id, found);
      }
      return found;
    };
    const cryptoKey = (resourceName: string, keyName: string, keyRing: gcp.kms.KeyRing) => {
      const key = new gcp.kms.CryptoKey(
        resourceName,
        {
          name: keyName,
          keyRing: keyRing.id,
          purpose: "ENCRYPT_DECRYPT",
          labels: { purpose: "pulumi-secrets" },
        },
        { ...resourceOpts, protect: true },
      );
      // key.id is projects/P/locations/L/keyRings/R/cryptoKeys/K, the form gcpkms:// takes.
      return { id: key.id, secretsProvider: pulumi.interpolate`gcpkms://${key.id}` };
    };

    if (args.secretsKey) {
      const { keyRing, cryptoKey: keyName, location } = args.secretsKey;
      this.secretsProvider = cryptoKey(
        `${name}-secrets-key`,
        keyName,
        ring(keyRing, location),
      ).secretsProvider;
    }
    if (args.secretsKeys) {
      const { keyRing, location, environments } = args.secretsKeys;
      for (const layer of SECRETS_KEY_LAYERS) {
        for (const environment of environments) {
          this.keys[layer][environment] = cryptoKey(
            `${name}-secrets-key-${layer}-${environment}`,
            `${layer}-${environment}`,
            ring(keyRing, location),
          );
        }
      }
    }
    this.registerOutputs({ backendUrl: this.backendUrl, secretsProvider: this.secretsProvider });
  }
}

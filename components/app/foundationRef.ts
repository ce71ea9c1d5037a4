import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import { publishedFoundationSchema, publishedObject } from "../gcp/publishedValues";

/** What the app layer reads from the foundation stack. */
export interface FoundationValues {
  /** `https://<endpoint>:6443`. */
  readonly endpoint: string;
  /** The Kubernetes API's CA certificate (PEM). */
  readonly kubernetesCaCertificate: string;
  readonly clusterName: string;
}

const REQUIRED = ["endpoint", "kubernetesCaCertificate", "clusterName"] as const;

/**
 * Reads the foundation's outputs through a StackReference on the same backend. `read()` waits for them
 * and fails with a clear message, not a missing-property error deep in a provider, when the foundation
 * stack is missing or has no outputs yet, so the app layer can stop before it registers anything else.
 */
export class FoundationReference extends pulumi.ComponentResource {
  /** None when the values are read from the published object: the engine would need the key. */
  private readonly reference?: pulumi.StackReference;

  constructor(
    name: string,
    private readonly args: {
      stack: string;
      environment: string;
      /** Read the object the foundation publishes in this gs:// backend, not its outputs. */
      publishedIn?: string;
    },
    opts?: pulumi.ComponentResourceOptions,
  ) {
    super("platform:app:FoundationReference", name, {}, opts);
    if (args.publishedIn === undefined) {
      this.reference = new pulumi.StackReference(
        `${name}-stack`,
        { name: args.stack },
        { parent: this },
      );
    }
    this.registerOutputs({});
  }

  /** The foundation's values; secret outputs stay secret. Rejects with a RunError when there are none. */
  async read(): Promise<pulumi.Output<FoundationValues>> {
    return this.args.publishedIn !== undefined ? this.readPublished() : this.readOutputs();
  }

  /**
   * The values the foundation published as a plain object in the state bucket: what CI reads, as
   * its identities cannot decrypt the foundation's key a StackReference needs (pulumi/pulumi#21436).
   */
  private async readPublished(): Promise<pulumi.Output<FoundationValues>> {
    const { stack, environment, publishedIn } = this.args;
    const stackName = stack.split("/").pop()!;
    const object = publishedObject(publishedIn!, stackName)!;
    const where = `gs://${object.bucket}/${object.name}`;
    const fix =
      `Run \`npm run platform -- up ${environment}\` (the foundation layer publishes it on a gs:// ` +
      `backend), then retry; or set talos-platform-app:foundationSource: stackReference in ` +
      `app/Pulumi.${environment}.yaml where the run may decrypt the foundation's key.`;
    let content: string;
    try {
      ({ content } = await gcp.storage.getBucketObjectContent(object, { parent: this }));
    } catch (error) {
      throw new pulumi.RunError(
        `talos-platform-app:foundationSource: the foundation's published values ${where} could not be read ` +
          `(${(error as Error).message}). ${fix}`,
      );
    }
    let parsed: ReturnType<typeof publishedFoundationSchema.safeParse>;
    try {
      parsed = publishedFoundationSchema.safeParse(JSON.parse(content));
    } catch (error) {
      throw new pulumi.RunError(
        `talos-platform-app:foundationSource: ${where} is not JSON (${(error as Error).message}). ${fix}`,
      );
    }
    if (!parsed.success) {
      throw new pulumi.RunError(
        `talos-platform-app:foundationSource: ${where} is not the foundation's published values ` +
          `(${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}). ${fix}`,
      );
    }
    return pulumi.output(parsed.data);
  }

  private async readOutputs(): Promise<pulumi.Output<FoundationValues>> {
    const { stack, environment } = this.args;
    // The reference comes from talos-platform-app:foundationStack (or its default), so a wrong one
    // is named by that key.
    const fix =
      `Run \`npm run platform -- up ${environment}\` (the foundation layer), then retry; if the ` +
      `foundation is another stack, set talos-platform-app:foundationStack ` +
      `(organization/project/stack) in app/Pulumi.${environment}.yaml.`;
    const key = "talos-platform-app:foundationStack";
    let details: pulumi.StackReferenceOutputDetails[];
    try {
      details = await Promise.all(REQUIRED.map((key) => this.reference!.getOutputDetails(key)));
    } catch (error) {
      // The engine fails the read when the stack does not exist (`unknown stack "…"`).
      throw new pulumi.RunError(
        `${key}: foundation stack ${stack} could not be read (${(error as Error).message}); the app layer needs ` +
          `the cluster first. ${fix}`,
      );
    }
    const missing = REQUIRED.filter(
      (_, i) => details[i].value === undefined && details[i].secretValue === undefined,
    );
    if (missing.length > 0) {
      throw new pulumi.RunError(
        `${key}: foundation stack ${stack} has no ${missing.join(", ")} output yet; the app layer needs the ` +
          `cluster first. ${fix}`,
      );
    }
    const value = (i: number) =>
      details[i].secretValue !== undefined
        ? pulumi.secret(details[i].secretValue as string)
        : pulumi.output(details[i].value as string);
    return pulumi
      .all([value(0), value(1), value(2)])
      .apply(([endpoint, kubernetesCaCertificate, clusterName]) => ({
        endpoint,
        kubernetesCaCertificate,
        clusterName,
      }));
  }
}

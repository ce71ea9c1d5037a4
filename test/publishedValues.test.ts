// components/gcp/publishedValues.ts: the foundation publishes the non-secret values the app layer
// reads as a plain object in its gs:// state bucket, because a StackReference needs the referenced
// stack's key (pulumi/pulumi#21436) and CI's identities never get the foundation's.
import { strict as assert } from "node:assert";
import { publishedFoundationSchema, publishedObject } from "../components/gcp/publishedValues";
import { proxmoxCluster } from "./fixtures";
import { runFoundation } from "./harness";

describe("published foundation values", () => {
  it("publishes endpoint, CA certificate and cluster name, in plain text and nothing else, on a gs:// backend", async () => {
    const { recorder, resolved } = await runFoundation({
      ...proxmoxCluster(),
      backend: "gs://example-state/platform/",
    });
    const [object] = recorder.ofType("gcp:storage/bucketObject:BucketObject");
    assert.ok(object, "a bucket object");
    assert.equal(object.inputs.bucket, "example-state");
    assert.equal(object.inputs.name, "platform/.platform-published/talos-platform/test.json");
    assert.equal(object.inputs.contentType, "application/json");
    // The provider keeps `content` secret in the foundation's own state (its schema marks it
    // sensitive); the object in the bucket is this plain JSON, which needs no key to read.
    const content = JSON.parse(object.inputs.content);
    assert.deepEqual(Object.keys(content).sort(), [
      "clusterName",
      "endpoint",
      "kubernetesCaCertificate",
    ]);
    assert.equal(content.endpoint, resolved!.endpoint);
    assert.equal(content.kubernetesCaCertificate, resolved!.kubernetesCaCertificate);
    assert.equal(content.clusterName, resolved!.clusterName);
    assert.doesNotMatch(object.inputs.content, /PRIVATE KEY|FAKE-SECRET/);
  });

  it("publishes nothing on another backend", async () => {
    const { recorder } = await runFoundation(proxmoxCluster());
    assert.equal(recorder.ofType("gcp:storage/bucketObject:BucketObject").length, 0);
    assert.equal(publishedObject("file:///tmp/state", "prod"), undefined);
    assert.deepEqual(publishedObject("gs://b", "prod"), {
      bucket: "b",
      name: ".platform-published/talos-platform/prod.json",
    });
  });

  it("refuses to publish anything but the three values", () => {
    assert.equal(
      publishedFoundationSchema.safeParse({
        endpoint: "https://k.example.net:6443",
        kubernetesCaCertificate: "-----BEGIN CERTIFICATE-----\nx",
        clusterName: "c",
        kubeconfig: "apiVersion: v1",
      }).success,
      false,
    );
    assert.equal(
      publishedFoundationSchema.safeParse({
        endpoint: "https://k.example.net:6443",
        kubernetesCaCertificate: "-----BEGIN EC PRIVATE KEY-----\nx",
        clusterName: "c",
      }).success,
      false,
    );
  });
});

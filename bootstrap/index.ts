// Entry point of the bootstrap project (`npm run platform -- up shared --layer bootstrap`).
import { bootstrapLayer } from "../components/bootstrap";
import { skipUnreadSdkTraces } from "../components/sdkTraces";

skipUnreadSdkTraces();

export = async () => bootstrapLayer();

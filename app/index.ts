// Entry point of the app project (`npm run platform -- preview staging --layer app`).
import { appLayer } from "../components/app";
import { skipUnreadSdkTraces } from "../components/sdkTraces";

skipUnreadSdkTraces();

export = async () => appLayer();

/**
 * The User-Agent of the service's calls to channel providers (Meta's Graph API, Twilio):
 * `workflow-automation/<package version>`, so a provider's support can tell our calls apart.
 */
import { version } from '../../package.json';

export const PROVIDER_USER_AGENT = `workflow-automation/${version}`;

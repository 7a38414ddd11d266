import type { Config } from '../../../../config';

/**
 * The address Twilio calls for a `twilio_voice` connection ("A call comes in" and the call
 * status callback): the one channel hook route. Also the exact URL X-Twilio-Signature is
 * computed over, and where `<Gather action>` and `<Redirect>` point back to.
 */
export const voiceHookUrl = (config: Pick<Config, 'BASE_URL'>, connectionId: string): string => `${config.BASE_URL}/hooks/channels/${connectionId}`;

/** The voice URL of numbers configured before the one channel hook route: still answered (signed over this URL). */
export const voiceAliasUrl = (config: Pick<Config, 'BASE_URL'>, connectionId: string): string => `${config.BASE_URL}/hooks/voice/${connectionId}`;

import type { Config } from '../../../../config';

/**
 * The address Twilio calls for a `twilio_voice` connection ("A call comes in" and the call
 * status callback). Also the exact URL X-Twilio-Signature is computed over, and where
 * `<Gather action>` and `<Redirect>` point back to.
 */
export const voiceHookUrl = (config: Pick<Config, 'BASE_URL'>, connectionId: string): string => `${config.BASE_URL}/hooks/voice/${connectionId}`;

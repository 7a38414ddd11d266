import { Migration } from '@mikro-orm/migrations';
import { parseSecretsKey, SecretBox } from '../../secrets';

/**
 * Webhook signing secrets (`webhooks.secret`, `previous_secret`) and webhook trigger secrets
 * (`triggers.configuration.secret`) are stored sealed like the channels' (AES-256-GCM under
 * SECRETS_ENCRYPTION_KEY, src/secrets.ts): this seals the rows written in clear before.
 * A value already sealed (`v1:`) is left alone, so a second run changes nothing. The key is
 * read from the environment, as the service reads it; without one, a database that holds a
 * secret in clear refuses to migrate rather than keep it so.
 */
export class Migration20261212000100_sealed_webhook_trigger_secrets extends Migration {
  override async up(): Promise<void> {
    const webhooks = await this.execute(
      `select id, secret, previous_secret from webhooks where secret not like 'v1:%' or (previous_secret is not null and previous_secret not like 'v1:%')`,
    );
    const triggers = await this.execute(
      `select id, configuration->>'secret' as secret from triggers where configuration->>'secret' is not null and configuration->>'secret' not like 'v1:%'`,
    );
    if (webhooks.length === 0 && triggers.length === 0) return;
    const keyText = process.env.SECRETS_ENCRYPTION_KEY;
    const key = keyText ? parseSecretsKey(keyText) : undefined;
    if (!key) throw new Error('SECRETS_ENCRYPTION_KEY (32 bytes, base64 or hex) is required to seal the webhook and trigger secrets stored in clear');
    const box = new SecretBox(key);
    const seal = (v: string | null) => (v === null || SecretBox.isSealed(v) ? v : box.seal(v));
    for (const w of webhooks) {
      await this.execute('update webhooks set secret = ?, previous_secret = ? where id = ?', [seal(w.secret as string), seal(w.previous_secret as string | null), w.id]);
    }
    for (const t of triggers) {
      await this.execute(`update triggers set configuration = jsonb_set(configuration, '{secret}', to_jsonb(?::text)) where id = ?`, [seal(t.secret as string), t.id]);
    }
  }
}

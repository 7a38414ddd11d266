/**
 * Owns users: create (password hashed), list, get, update (role, password) and delete,
 * scoped to one organization; and `authenticate` for the sign-in page.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { flushOrConflict } from '../../db/flush';
import { conflict, notFound } from '../../errors';
import { offsetOf, type Page } from '../../http/pagination';
import { newId } from '../../ids';
import { hashPassword, verifyNothing, verifyPassword } from './password';
import { type Role, User } from './user.entity';

const userNotFound = () => notFound('USER_NOT_FOUND', 'User');
const emailTaken = () => conflict('USER_ALREADY_EXISTS', 'A user with this email already exists', 'email');

export class UserService {
  constructor(private readonly em: EntityManager) {}

  async create(organizationId: string, input: { email: string; password: string; role: Role }): Promise<User> {
    const user = this.em.create(User, {
      id: newId('user'),
      organizationId,
      email: input.email.toLowerCase(),
      passwordHash: await hashPassword(input.password),
      role: input.role,
    });
    await flushOrConflict(this.em, emailTaken);
    return user;
  }

  async list(organizationId: string, page: Page) {
    const [items, total] = await this.em.findAndCount(
      User,
      { organizationId },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.limit, offset: offsetOf(page) },
    );
    return { items, total };
  }

  async get(organizationId: string, id: string): Promise<User> {
    const user = await this.em.findOne(User, { id, organizationId });
    if (!user) throw userNotFound();
    return user;
  }

  async update(organizationId: string, id: string, input: { role?: Role | undefined; password?: string | undefined }): Promise<User> {
    const user = await this.get(organizationId, id);
    if (input.role !== undefined) user.role = input.role;
    if (input.password !== undefined) user.passwordHash = await hashPassword(input.password);
    user.updatedAt = new Date();
    await this.em.flush();
    return user;
  }

  async delete(organizationId: string, id: string): Promise<User> {
    const user = await this.get(organizationId, id);
    await this.em.remove(user).flush();
    return user;
  }

  /** The user when the password matches; null otherwise, after the same scrypt work either way. */
  async authenticate(organizationId: string, email: string, password: string): Promise<User | null> {
    const user = await this.em.findOne(User, { organizationId, email: email.trim().toLowerCase() });
    if (!user) return verifyNothing(password).then(() => null);
    return (await verifyPassword(password, user.passwordHash)) ? user : null;
  }
}

import { z } from 'zod';
import { invalidParams } from '../broker-error.js';
import type { Task } from '../task.js';
import { TASK_STATE_V03 } from './field-table.js';
import { type V1ListTasksRequest, type V1ListTasksResponse, V1_LIST_TASKS_DEFAULT_PAGE_SIZE } from './schemas.js';
import { taskToV1 } from './task-mapping.js';

/** Where a page ends: the last task's `createdAt` and id (tasks are ordered by both). */
const CursorSchema = z.object({ c: z.string(), i: z.string() });

function encodeCursor(task: Task): string {
  const bytes = new TextEncoder().encode(JSON.stringify({ c: task.createdAt, i: task.id }));
  return btoa(String.fromCharCode(...bytes))
    .replaceAll('+', '-')
    .replaceAll('/', '_')
    .replace(/=+$/, '');
}

function decodeCursor(token: string): { c: string; i: string } {
  try {
    const binary = atob(token.replaceAll('-', '+').replaceAll('_', '/'));
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    return CursorSchema.parse(JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)));
  } catch {
    throw invalidParams(
      'pageToken is not a token of this broker: pass the nextPageToken of the previous page, or none',
    );
  }
}

function after(task: Task, cursor: { c: string; i: string }): boolean {
  return task.createdAt > cursor.c || (task.createdAt === cursor.c && task.id > cursor.i);
}

/**
 * One v1.0 `ListTasks` page of the caller's tasks: filtered by context, state
 * and status time, ordered by creation then id (oldest first, so a task
 * created while paging lands on a later page and none is skipped), with
 * histories cut to `historyLength` and artifacts only when asked for.
 */
export function listTasksPage(tasks: readonly Task[], request: V1ListTasksRequest): V1ListTasksResponse {
  const state = request.status === undefined ? undefined : TASK_STATE_V03[request.status];
  const since = request.statusTimestampAfter;
  const matching = tasks
    .filter(
      (task) =>
        (request.contextId === undefined || request.contextId === '' || task.contextId === request.contextId) &&
        (state === undefined || task.status.state === state) &&
        (since === undefined || task.status.timestamp >= since),
    )
    .sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1));
  const cursor =
    request.pageToken === undefined || request.pageToken === '' ? undefined : decodeCursor(request.pageToken);
  const rest = cursor === undefined ? matching : matching.filter((task) => after(task, cursor));
  const pageSize = request.pageSize ?? V1_LIST_TASKS_DEFAULT_PAGE_SIZE;
  const page = rest.slice(0, pageSize);
  const last = page.at(-1);
  return {
    tasks: page.map((task) => {
      const history =
        request.historyLength === undefined
          ? task.history
          : task.history.slice(task.history.length - request.historyLength);
      const shown = taskToV1({
        ...task,
        history: request.historyLength === 0 ? [] : history,
        artifacts: request.includeArtifacts === true ? task.artifacts : [],
      });
      return shown;
    }),
    nextPageToken: rest.length > pageSize && last !== undefined ? encodeCursor(last) : '',
    pageSize,
    totalSize: matching.length,
  };
}

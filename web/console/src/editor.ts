// The SQL editor: CodeMirror 6 with MySQL highlighting; errors from
// POST /v1/sql are marked at their line and column.

import { basicSetup } from 'codemirror';
import { EditorView, keymap } from '@codemirror/view';
import { Prec } from '@codemirror/state';
import { sql, MySQL } from '@codemirror/lang-sql';
import { lintGutter, setDiagnostics, type Diagnostic } from '@codemirror/lint';

export interface SQLEditor {
  view: EditorView;
  text(): string;
  set(text: string): void;
  markError(line: number, column: number, message: string): void;
  clearErrors(): void;
}

export function createEditor(parent: HTMLElement, doc: string, onRun: () => void, tables: () => Record<string, string[]>): SQLEditor {
  const view = new EditorView({
    parent,
    doc,
    extensions: [
      Prec.highest(keymap.of([{ key: 'Mod-Enter', run: () => (onRun(), true) }])),
      basicSetup,
      sql({ dialect: MySQL, upperCaseKeywords: true, schema: tables() }),
      lintGutter(),
      EditorView.updateListener.of((u) => {
        if (u.docChanged) clearErrors();
      }),
      EditorView.theme({ '&': { height: '100%' }, '.cm-scroller': { overflow: 'auto' } }),
    ],
  });
  function clearErrors() {
    view.dispatch(setDiagnostics(view.state, []));
  }
  return {
    view,
    text: () => view.state.doc.toString(),
    set(text: string) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    },
    // markError marks from (line, column), both 1-based, to the end of the
    // word there, and scrolls it into view.
    markError(line: number, column: number, message: string) {
      const doc = view.state.doc;
      const l = doc.line(Math.min(Math.max(line, 1), doc.lines));
      const from = Math.min(l.from + Math.max(column - 1, 0), l.to);
      const word = /^[\w.$]+|^\S/.exec(doc.sliceString(from, l.to));
      const to = Math.min(from + (word ? word[0].length : 0), l.to);
      const d: Diagnostic = { from, to: Math.max(to, from), severity: 'error', message };
      view.dispatch(setDiagnostics(view.state, [d]), { selection: { anchor: from }, scrollIntoView: true });
    },
    clearErrors,
  };
}

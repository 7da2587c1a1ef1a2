;;; eglot_fix.el --- the README's eglot setup against the real driveros-lsp  -*- lexical-binding: t -*-
;; Loads $DRIVEROS_SNIPPET (the README's eglot block, verbatim), opens $DRIVEROS_FILE in
;; python-mode, starts eglot the way M-x eglot does (eglot-server-programs), asks for code
;; actions on a diagnostic, runs the "Ask agent to fix" command, waits for the proposal,
;; accepts it through eglot and writes what happened as JSON to $RESULT.
(require 'package)
(add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
(package-initialize)
(require 'json)
(load-file (getenv "DRIVEROS_SNIPPET"))
(require 'eglot)
(setq eglot-confirm-server-initiated-edits nil)

(defvar result nil)
(defun put-result (key value) (push (cons key value) result))
(defun finish ()
  (with-temp-file (getenv "RESULT") (insert (json-encode result)))
  (kill-emacs 0))
(defun fail (what)
  (put-result 'error what)
  (finish))

(defun wait-until (seconds pred what)
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (unless (funcall pred) (fail (format "timed out waiting for %s" what)))))

(condition-case err
    (progn
      (find-file (getenv "DRIVEROS_FILE"))
      (put-result 'mode (symbol-name major-mode))
      ;; what M-x eglot does: guess the contact from eglot-server-programs
      (let ((contact (eglot--guess-contact)))
        (put-result 'contact (format "%S" (nth 3 contact)))
        (apply #'eglot contact))
      ;; a slow start continues in the background: wait for the connection
      (wait-until 60 #'eglot-current-server "the server to initialize")
      (let* ((server (eglot-current-server))
             (diag (list :range (list :start (list :line 1 :character 4)
                                      :end (list :line 1 :character 16))
                         :severity 1 :source "pyright"
                         :message "add() subtracts instead of adding"))
             (actions (jsonrpc-request
                       server :textDocument/codeAction
                       (list :textDocument (eglot--TextDocumentIdentifier)
                             :range (plist-get diag :range)
                             :context (list :diagnostics (vector diag)))))
             (titles (mapcar (lambda (a) (plist-get a :title)) actions))
             (fix (seq-find (lambda (a) (string-prefix-p "Ask agent to fix: " (plist-get a :title)))
                            actions)))
        (put-result 'titles (vconcat titles))
        (unless fix (fail "no Ask agent to fix action"))
        ;; run the action's command the way eglot's code-action menu does
        (let* ((cmd (plist-get fix :command))
               (started (eglot-execute-command server (intern (plist-get cmd :command))
                                               (plist-get cmd :arguments)))
               (run-id (plist-get started :runId))
               (state nil))
          (put-result 'run_id run-id)
          (wait-until 120
                      (lambda ()
                        (let ((runs (plist-get (jsonrpc-request
                                                server :workspace/executeCommand
                                                (list :command "driveros.agent.list"))
                                               :runs)))
                          (setq state (plist-get (seq-find (lambda (r) (equal (plist-get r :runId) run-id))
                                                           runs)
                                                 :state))
                          (member state '("proposed" "finished" "failed" "canceled"))))
                      "the run to end")
          (put-result 'state state)
          ;; accept: the server's workspace/applyEdit changes the buffer through eglot
          (eglot-execute-command server 'driveros.review.accept (vector (list :runId run-id)))
          (wait-until 30 (lambda () (string-match-p "a \\+ b" (buffer-string))) "the edit in the buffer")
          (put-result 'buffer (buffer-string))
          (put-result 'modified (if (buffer-modified-p) t :json-false))
          (put-result 'events (with-current-buffer (jsonrpc-events-buffer server)
                                (buffer-substring-no-properties (point-min) (point-max))))
          (ignore-errors (eglot-shutdown server))))
      (finish))
  (error (fail (format "%S" err))))

;;; eglot_wrap.el --- eglot's own flow against driveros-lsp --wrap -- pyright  -*- lexical-binding: t -*-
;; Loads $DRIVEROS_SNIPPET (the README's eglot block, verbatim), opens $DRIVEROS_FILE in
;; python-mode and starts eglot the way M-x eglot does. Then, with nothing built by hand:
;; flymake shows pyright's diagnostic, `eglot-code-actions' at point offers the actions (the
;; menu is answered by picking "Ask agent to fix: …"), the run ends in a proposal, and
;; `eglot-code-actions' again picks "Accept agent proposal", which edits the buffer.
;; What happened is written as JSON to $RESULT.
(require 'package)
(add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
(package-initialize)
(require 'json)
(require 'cl-lib)
(load-file (getenv "DRIVEROS_SNIPPET"))
(require 'eglot)
(require 'flymake)
(setq eglot-confirm-server-initiated-edits nil)

(defvar result nil)
(defun put-result (key value) (push (cons key value) result))
(defun finish ()
  (with-temp-file (getenv "RESULT") (insert (json-encode result)))
  (kill-emacs 0))
(defun fail (what)
  (put-result 'error what)
  (ignore-errors
    (put-result 'events (with-current-buffer (jsonrpc-events-buffer (eglot-current-server))
                          (buffer-substring-no-properties (max (point-min) (- (point-max) 6000))
                                                          (point-max)))))
  (finish))

(defun wait-until (seconds pred what)
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (unless (funcall pred) (fail (format "timed out waiting for %s" what)))))

(defun pick-code-action (prefix)
  "Run `eglot-code-actions' at point as a user does, choosing the first title with PREFIX.
Returns the titles the menu offered."
  (let ((offered nil)
        (last-nonmenu-event ?\r))  ; a keyboard user: the menu is a completing-read
    (cl-letf (((symbol-function 'completing-read)
               (lambda (_prompt collection &rest _)
                 (setq offered (mapcar #'car collection))
                 (or (seq-find (lambda (title) (string-prefix-p prefix title)) offered)
                     (fail (format "no %S action in %S" prefix offered))))))
      (call-interactively #'eglot-code-actions))
    offered))

(defun driveros-runs (server)
  (append (plist-get (jsonrpc-request server :workspace/executeCommand
                                      (list :command "driveros.agent.list"))
                     :runs)
          nil))

(condition-case err
    (progn
      (find-file (getenv "DRIVEROS_FILE"))
      (put-result 'mode (symbol-name major-mode))
      (let ((contact (eglot--guess-contact)))
        (put-result 'contact (format "%S" (nth 3 contact)))
        (apply #'eglot contact))
      (wait-until 90 #'eglot-current-server "the server to initialize")
      (let ((server (eglot-current-server)))
        ;; pyright's diagnostic, as flymake shows it
        (wait-until 120 (lambda () (flymake-diagnostics)) "flymake diagnostics")
        (let ((diag (car (flymake-diagnostics))))
          (put-result 'flymake (flymake-diagnostic-text diag))
          (goto-char (flymake-diagnostic-beg diag)))
        (put-result 'titles (vconcat (pick-code-action "Ask agent to fix: ")))
        ;; the run started from the menu; wait for its proposal
        (let ((state nil))
          (wait-until 150
                      (lambda ()
                        (let ((run (car (driveros-runs server))))
                          (setq state (plist-get run :state))
                          (member state '("proposed" "finished" "failed" "canceled"))))
                      "the run to end")
          (put-result 'state state))
        (put-result 'disk_before_accept
                    (with-temp-buffer (insert-file-contents (getenv "DRIVEROS_FILE")) (buffer-string)))
        (put-result 'review_titles (vconcat (pick-code-action "Accept agent proposal")))
        (wait-until 30 (lambda () (string-match-p "total: int" (buffer-string))) "the edit in the buffer")
        (put-result 'buffer (buffer-string))
        (put-result 'modified (if (buffer-modified-p) t :json-false))
        (ignore-errors (eglot-shutdown server)))
      (finish))
  (error (fail (format "%S" err))))

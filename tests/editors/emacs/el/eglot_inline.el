;;; eglot_inline.el --- docs/inline.md's eglot command against driveros-lsp  -*- lexical-binding: t -*-
;; Loads $DRIVEROS_SNIPPET (the command from docs/inline.md, verbatim), starts eglot with
;; driveros-lsp for python-mode, puts point at the end of the empty line of add(), calls
;; `driveros-inline-complete' and writes the buffer to $RESULT as JSON.
(require 'package)
(add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
(package-initialize)
(require 'json)
(require 'eglot)
(load-file (getenv "DRIVEROS_SNIPPET"))
(add-to-list 'eglot-server-programs
             `(python-mode . ("driveros-lsp" "--stdio"
                              :initializationOptions
                              (:provider "openai"
                               :inlineCompletion (:api "completions" :model "scripted-model"
                                                  :debounceMs 0)))))
(defvar result nil)
(defun put-result (key value) (push (cons key value) result))
(defun finish ()
  (with-temp-file (getenv "RESULT") (insert (json-encode result)))
  (kill-emacs 0))
(condition-case err
    (progn
      (find-file (getenv "DRIVEROS_FILE"))
      (apply #'eglot (eglot--guess-contact))
      (let ((deadline (+ (float-time) 60)))
        (while (and (not (eglot-current-server)) (< (float-time) deadline))
          (accept-process-output nil 0.05)))
      (goto-char (point-min))
      (forward-line 1)
      (end-of-line)
      (driveros-inline-complete)
      (put-result 'buffer (buffer-string))
      (put-result 'point (list (line-number-at-pos) (current-column)))
      (let ((deadline (+ (float-time) 10))
            (counts (expand-file-name "inline-acceptance.json" (getenv "DRIVEROS_STATE_DIR"))))
        (while (and (not (file-exists-p counts)) (< (float-time) deadline))
          (accept-process-output nil 0.05))
        (put-result 'counted (if (file-exists-p counts) t :json-false)))
      (ignore-errors (eglot-shutdown (eglot-current-server)))
      (finish))
  (error (put-result 'error (format "%S" err)) (finish)))

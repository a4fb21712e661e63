--  The lab's settings (PORT, WORKERS, BACKLOG, BIND) read from the
--  environment.  An invalid value raises Invalid_Setting with a message that
--  names the variable: the server stops rather than run with a value nobody
--  asked for.

package Lab_Settings is

   Invalid_Setting : exception;

   --  The text of the environment variable Name, "" when unset.
   function Env (Name : String) return String;

   --  Name as a number from 1 to Last, Default when unset or empty.
   function Env_Positive
     (Name : String; Default, Last : Positive) return Positive;

   --  Name as an IP address literal (inet_pton's reading of it), Default
   --  when unset or empty.  A host name is refused.
   function Env_Address (Name, Default : String) return String;

   --  N without the leading blank of Positive'Image.
   function Image (N : Positive) return String;

end Lab_Settings;

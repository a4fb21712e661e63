--  The lab's settings (PORT, WORKERS, BACKLOG, BIND) read from the
--  environment, shared by every Ada server (servers/ada/labenv).  An invalid
--  value raises Invalid_Setting with a message that names the variable: the
--  server stops rather than run with a value nobody asked for.  Unset or
--  empty means the default.

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

   --  The four settings with the defaults and ranges of every Ada server.

   --  BIND: an IP address, default 127.0.0.1 (every interface only when
   --  asked for).
   function Bind return String;

   --  PORT: 1 to 65535, default 8080.
   function Port return Positive;

   --  BACKLOG: the accept queue, 1 to 65535, default 512.
   function Backlog return Positive;

   --  WORKERS: 1 to 10000, Default when unset or empty.
   function Workers (Default : Positive) return Positive;

   --  True when WORKERS is set and not empty (else a library's own default
   --  applies, for the servers that have one).
   function Workers_Given return Boolean;

   --  Address:Port as a URL writes it: [Address]:Port for IPv6.
   function Endpoint (Address : String; Port : Positive) return String;

end Lab_Settings;
